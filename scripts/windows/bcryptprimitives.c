/* Test scaffolding for running Windows binaries under wine 8.0; never shipped, never used on Windows.

   Windows has bcryptprimitives.dll; wine 8.0 lacks it. Every Rust >= 1.78 binary (rg.exe among them)
   imports ProcessPrng from it to seed its hash maps, and without it cannot start. This stand-in exports
   ProcessPrng on advapi32's RtlGenRandom (SystemFunction036). scripts/windows-env compiles it with
   mingw-w64 into the wine prefix's system32. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

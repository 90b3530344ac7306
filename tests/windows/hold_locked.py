"""Hold a file open with no sharing, as an editor or a build tool on Windows may (run under wine).

    python hold_locked.py PATH      prints "locked" once the file is held, then holds it until stdin ends

Another process that opens the file meanwhile fails with ERROR_SHARING_VIOLATION (os error 32).
"""

from __future__ import annotations

import ctypes
import sys
from ctypes import wintypes

GENERIC_READ = 0x80000000
OPEN_EXISTING = 3
INVALID_HANDLE_VALUE = wintypes.HANDLE(-1).value

kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
kernel32.CreateFileW.restype = wintypes.HANDLE
kernel32.CreateFileW.argtypes = [
    wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p, wintypes.DWORD, wintypes.DWORD,
    wintypes.HANDLE,
]  # fmt: skip


def main() -> None:
    handle = kernel32.CreateFileW(sys.argv[1], GENERIC_READ, 0, None, OPEN_EXISTING, 0, None)
    if handle == INVALID_HANDLE_VALUE:
        raise SystemExit(f"cannot open {sys.argv[1]}: error {ctypes.get_last_error()}")
    print("locked", flush=True)
    sys.stdin.read()
    kernel32.CloseHandle(handle)


if __name__ == "__main__":
    main()

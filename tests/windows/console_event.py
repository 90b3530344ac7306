"""Deliver a console control event to every process of a given image name, as Windows does (run under wine).

    python console_event.py EVENT NAME      EVENT: 0 Ctrl-C, 1 Ctrl-Break, 2 close; NAME: e.g. dsh-search.exe

Windows delivers a console control event by starting a thread in each process attached to the console at
kernel32's (kernelbase's) `CtrlRoutine`, with the event as its argument; that routine calls the handlers
the process registered (SetConsoleCtrlHandler; Python's for Ctrl-C and Ctrl-Break, which raise SIGINT and
SIGBREAK), and ExitProcess when none of them handled the event. This helper does the same with
CreateRemoteThread: wine's console, which a process started over pipes has not, is not needed. It prints the
Windows pids it reached.
"""

from __future__ import annotations

import ctypes
import sys
from ctypes import wintypes

kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
PROCESS_ALL_ACCESS = 0x1F0FFF
TH32CS_SNAPPROCESS = 0x2


class PROCESSENTRY32W(ctypes.Structure):
    _fields_ = [
        ("dwSize", wintypes.DWORD),
        ("cntUsage", wintypes.DWORD),
        ("th32ProcessID", wintypes.DWORD),
        ("th32DefaultHeapID", ctypes.c_void_p),
        ("th32ModuleID", wintypes.DWORD),
        ("cntThreads", wintypes.DWORD),
        ("th32ParentProcessID", wintypes.DWORD),
        ("pcPriClassBase", ctypes.c_long),
        ("dwFlags", wintypes.DWORD),
        ("szExeFile", ctypes.c_wchar * 260),
    ]


def processes(name: str) -> list[int]:
    kernel32.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    snap = kernel32.CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0)
    entry = PROCESSENTRY32W()
    entry.dwSize = ctypes.sizeof(entry)
    found = []
    ok = kernel32.Process32FirstW(snap, ctypes.byref(entry))
    while ok:
        if entry.szExeFile.lower() == name.lower():
            found.append(entry.th32ProcessID)
        ok = kernel32.Process32NextW(snap, ctypes.byref(entry))
    kernel32.CloseHandle(snap)
    return found


def main() -> None:
    event, name = int(sys.argv[1]), sys.argv[2]
    kernel32.GetModuleHandleW.restype = wintypes.HMODULE
    kernel32.GetProcAddress.restype = ctypes.c_void_p
    kernel32.GetProcAddress.argtypes = [wintypes.HMODULE, ctypes.c_char_p]
    routine = kernel32.GetProcAddress(kernel32.GetModuleHandleW("kernelbase"), b"CtrlRoutine")
    if not routine:
        routine = kernel32.GetProcAddress(kernel32.GetModuleHandleW("kernel32"), b"CtrlRoutine")
    assert routine, "no CtrlRoutine"
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.CreateRemoteThread.restype = wintypes.HANDLE
    kernel32.CreateRemoteThread.argtypes = [
        wintypes.HANDLE, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, wintypes.DWORD,
        ctypes.c_void_p,
    ]  # fmt: skip
    reached = []
    for pid in processes(name):
        handle = kernel32.OpenProcess(PROCESS_ALL_ACCESS, False, pid)
        if not handle:
            continue
        thread = kernel32.CreateRemoteThread(handle, None, 0, routine, event, 0, None)
        if thread:
            reached.append(pid)
            kernel32.CloseHandle(thread)
        kernel32.CloseHandle(handle)
    print(" ".join(map(str, reached)))


if __name__ == "__main__":
    main()

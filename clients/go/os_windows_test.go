//go:build windows

package dshsearch

import (
	"strings"
	"syscall"
)

// processGone reports whether no running process has this pid.
func processGone(pid int) bool {
	const queryLimitedInformation = 0x1000
	h, err := syscall.OpenProcess(queryLimitedInformation, false, uint32(pid))
	if err != nil {
		return true
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != 259 // STILL_ACTIVE
}

// sidecarOf is where the daemon looks for ripgrep: dsh-search-rg.exe beside dsh-search.exe.
func sidecarOf(exe string) string { return strings.TrimSuffix(exe, ".exe") + "-rg.exe" }

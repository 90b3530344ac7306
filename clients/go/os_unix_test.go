//go:build !windows

package dshsearch

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has this pid.
func processGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// sidecarOf is where the daemon looks for ripgrep: `<executable>-rg`.
func sidecarOf(exe string) string { return exe + "-rg" }

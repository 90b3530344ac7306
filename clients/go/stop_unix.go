//go:build !windows

package dshsearch

import (
	"os"
	"syscall"
)

// askToStop asks the daemon to stop as a host does on POSIX: SIGTERM (it aborts its searches, ends their
// ripgrep process groups and exits within graceMs + 1 s).
func askToStop(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// stopSignalName names askToStop in messages.
const stopSignalName = "SIGTERM"

// executableName is the daemon's file name on this platform.
const executableName = "dsh-search"

//go:build windows

package dshsearch

import "os"

// askToStop asks the daemon to stop as Windows allows a host to: it terminates the onefile launcher (the
// process Start spawned), which the daemon watches; the daemon then stops as on SIGTERM (it aborts its
// searches, ends their ripgrep Job Objects and exits within graceMs + 1 s).
func askToStop(p *os.Process) error { return p.Kill() }

// stopSignalName names askToStop in messages.
const stopSignalName = "termination of its launcher"

// executableName is the daemon's file name on this platform.
const executableName = "dsh-search.exe"

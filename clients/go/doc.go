// Package dshsearch is a client for the dsh-search daemon, standard library only (Go 1.19 or newer).
//
// Start spawns the daemon (by default the one FindExecutable finds: $DSH_SEARCH_EXE, else dsh-search on
// PATH), speaks newline-delimited JSON-RPC 2.0 over its stdin/stdout and initializes the session. Calls are
// safe from many goroutines: writes are serialised and answers matched by id. Lines are read with
// bufio.Reader, so an answer of any length is fine (bufio.Scanner would stop at 64 KiB).
//
//	client, err := dshsearch.Start(ctx, dshsearch.Options{
//		SampleOverCapGlobResults: dshsearch.Bool(true),
//		Workdir:                  "/path/to/project",
//	})
//	if err != nil {
//		return err // a *StartupError if the daemon exited first (status 3: its ripgrep sidecar is missing)
//	}
//	defer client.Close()
//	found, err := client.Grep(ctx, dshsearch.GrepParams{Pattern: "TODO", Include: "*.go"})
//
// When a call's context ends first, the call sends $/cancelRequest for it and waits (Options.CancelWait)
// for the daemon's -32800 answer, which confirms that the search and its ripgrep are gone; the error is a
// *CancelledError that unwraps to context.Canceled or context.DeadlineExceeded, and CancelReply(err) is the
// daemon's answer (Kind() SEARCH_ABORTED, Text() for the model). A failed call is an *Error whose Kind() is
// the failure kind (SEARCH_FAILED, …; ErrorKinds() has them all) and Text() what a model should be shown.
//
// Glob, Grep and TerminalSearch take an OnProgress callback in their params: it gets the daemon's progress
// reports while the call runs.
//
// Close stops the daemon without leaking anything: shutdown, exit, close stdin, SIGTERM after a grace, and
// SIGKILL only as the very last resort (a SIGKILLed PyInstaller onefile launcher leaves its _MEI* directory
// behind and orphans the daemon). That is also why the daemon is started with exec.Command and not
// exec.CommandContext, whose default on cancellation is SIGKILL.
package dshsearch

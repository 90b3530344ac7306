// Example host: one dsh-search session through the Go client library (clients/go, standard library only,
// NDJSON framing underneath).
//
//	go build -o go-host . && ./go-host [-exe PATH | PATH] [-corpus DIR] [-block-in-slow-grep]
//
//	-exe PATH             the daemon (else $DSH_SEARCH_EXE, else dsh-search on PATH)
//	-corpus DIR           where the slow-grep corpus lives (generated there when missing; default: a
//	                      temporary directory)
//	-block-in-slow-grep   start a slow grep and wait for it forever (the tests SIGKILL the host then)
//
// The session: initialize, tools/list, concurrent requests from goroutines (glob, grep, ping, and a slow
// grep whose context times out → $/cancelRequest → -32800), a grep with a bad pattern, a slow grep
// cancelled with context.WithCancel, scrollback/append + terminal_search, shutdown, and the client's
// teardown (exit, close stdin, SIGTERM after a grace, never SIGKILL first). Each step prints one
// transcript line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	dshsearch "github.com/dsh-search/dsh-search/clients/go"
)

// A regex with no required literal over Unicode word classes: ripgrep has to run its regex engine over
// every line, which takes seconds on the generated corpus. Nothing in the corpus has a nine-letter word,
// so the search finds nothing and stays small however long it runs.
const slowPattern = `(?:\w+\W){1,20}?\w{9}\b`

func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func main() {
	exe := flag.String("exe", "", "the dsh-search executable (default: $DSH_SEARCH_EXE, else dsh-search on PATH)")
	corpus := flag.String("corpus", "", "directory of the slow-grep corpus (generated when missing)")
	block := flag.Bool("block-in-slow-grep", false, "start a slow grep and wait for it forever")
	flag.Parse()
	if flag.NArg() > 0 {
		*exe = flag.Arg(0)
	}
	os.Exit(run(*exe, *corpus, *block))
}

func run(exe, corpus string, block bool) int {
	// Ctrl-C or SIGTERM to this host ends the session through the same clean teardown.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	exe, err := dshsearch.FindExecutable(exe)
	if err != nil {
		say("FAILED: %v", err)
		return 1
	}
	scratch, err := os.MkdirTemp("", "dsh-go-host-")
	if err != nil {
		say("FAILED: %v", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	tree := filepath.Join(scratch, "tree")
	if err := writeDemoTree(tree); err != nil {
		say("FAILED: %v", err)
		return 1
	}
	if corpus == "" {
		corpus = filepath.Join(scratch, "slow")
	}
	if corpus, err = filepath.Abs(corpus); err == nil {
		err = ensureSlowCorpus(corpus, 4, 400_000)
	}
	if err != nil {
		say("FAILED: %v", err)
		return 1
	}

	startCtx, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	client, err := dshsearch.Start(startCtx, dshsearch.Options{
		Executable:               exe,
		SampleOverCapGlobResults: dshsearch.Bool(true), // required: there is no default
		Workdir:                  tree,
		SpillDir:                 filepath.Join(scratch, "spill"),
		ClientName:               "dsh-search-go-host",
		ClientVersion:            "0.1.0",
		Log:                      func(format string, args ...any) { say("client: "+format, args...) },
	})
	cancelStart()
	var startup *dshsearch.StartupError
	if errors.As(err, &startup) {
		// The daemon refused to run and said why in one stderr line: status 3 = the ripgrep sidecar is
		// missing or broken (a broken install: reinstall, do not retry), status 2 = invalid configuration.
		say("exit: %s", describeExit(startup.State))
		say("FAILED: daemon exited unexpectedly (%s)", describeExit(startup.State))
		return 1
	} else if err != nil {
		say("FAILED: could not start %s: %v", exe, err)
		return 1
	}
	say("spawned %s pid=%d framing=ndjson", exe, client.Pid())

	failed := session(ctx, client, corpus, block)

	// Close: shutdown (done by the session), exit, close stdin, SIGTERM after a grace, SIGKILL only as the
	// last resort (a SIGKILLed onefile launcher leaks its _MEI* directory and orphans the daemon).
	state, stopErr := client.Close()
	if stopErr != nil {
		say("teardown: %v", stopErr)
	}
	say("exit: %s", describeExit(state))
	if failed != nil {
		if errors.Is(failed, dshsearch.ErrClosed) {
			failed = fmt.Errorf("daemon exited unexpectedly (%s)", describeExit(state))
		}
		say("FAILED: %v", failed)
		return 1
	}
	say("done")
	return 0
}

func describeExit(state *os.ProcessState) string {
	if state == nil {
		return "unknown status"
	}
	signalName := "none"
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		signalName = ws.Signal().String()
	}
	return fmt.Sprintf("daemon exited with code %d signal %s", state.ExitCode(), signalName)
}

// -- the session ---------------------------------------------------------------------------------------

// describe shows an error the way a host would log it: for a tool error, its code, kind and the first line
// of the text meant for the model.
func describe(err error) string {
	var cancelled *dshsearch.CancelledError
	if errors.As(err, &cancelled) && cancelled.Reply != nil {
		return describe(cancelled.Reply)
	}
	var rpcErr *dshsearch.Error
	if errors.As(err, &rpcErr) {
		return fmt.Sprintf("error %d %s: %s", rpcErr.Code, rpcErr.Kind(), strings.SplitN(rpcErr.Text(), "\n", 2)[0])
	}
	return err.Error()
}

func session(ctx context.Context, c *dshsearch.Client, corpus string, block bool) error {
	// Every call gets a deadline: a host must never wait forever on a child process.
	quick := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }

	init := c.InitializeResult()
	say("initialize: %s %s, ripgrep %s, protocol %s", init.ServerInfo.Name, init.ServerInfo.Version, init.Ripgrep.Version, init.ProtocolVersion)

	// The model-facing tools. terminal_search may be listed only once a scrollback exists; it can be called
	// directly either way.
	cctx, cancel := quick()
	tools, err := c.ToolsList(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	say("tools/list: %s", strings.Join(names, ", "))

	if block {
		// For the tests: a slow grep that this host waits for until someone kills it.
		say("slow grep: started in %s, waiting", corpus)
		_, err := c.Grep(ctx, dshsearch.GrepParams{Pattern: slowPattern, Cwd: corpus})
		say("slow grep: ended: %v", err)
		return err
	}

	if err := concurrent(ctx, c, corpus); err != nil {
		return err
	}

	// A search failure is an *Error: Kind() says what failed, Text() what to show the model.
	cctx, cancel = quick()
	_, err = c.Grep(cctx, dshsearch.GrepParams{Pattern: "("})
	cancel()
	var rpcErr *dshsearch.Error
	if !errors.As(err, &rpcErr) {
		return fmt.Errorf(`grep "(": expected an error response, got %v`, err)
	}
	say(`grep "(": %s`, describe(err))

	// Cancellation: when the context is cancelled, the call sends `$/cancelRequest {id}`; the daemon kills
	// that search's ripgrep process group and answers -32800.
	cctx, cancel = context.WithCancel(ctx)
	var cancelledAt time.Time
	started := time.Now()
	timer := time.AfterFunc(500*time.Millisecond, func() { cancelledAt = time.Now(); cancel() })
	_, err = c.Grep(cctx, dshsearch.GrepParams{Pattern: slowPattern, Cwd: corpus})
	timer.Stop()
	cancel()
	if err := expectCancelled(err, context.Canceled); err != nil {
		return fmt.Errorf("slow grep: %w", err)
	}
	say("slow grep: cancelled after %d ms, answered %d ms later: %s",
		cancelledAt.Sub(started).Milliseconds(), time.Since(cancelledAt).Milliseconds(), describe(err))

	if err := terminal(ctx, c); err != nil {
		return err
	}

	// Polite end: `shutdown` waits for running searches and answers null; Close then says `exit`.
	cctx, cancel = quick()
	err = c.Shutdown(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	say("shutdown: null")
	return nil
}

// concurrent sends several requests at once from goroutines, one of them a slow grep under a context
// timeout: the daemon answers the quick ones while the slow one runs, and when the deadline passes the
// client cancels the slow one with `$/cancelRequest`.
func concurrent(ctx context.Context, c *dshsearch.Client, corpus string) error {
	type outcome struct {
		line string
		err  error
	}
	var (
		mu       sync.Mutex
		order    []string
		outcomes = map[string]outcome{}
		wg       sync.WaitGroup
	)
	run := func(name string, fn func() (string, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line, err := fn()
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
			outcomes[name] = outcome{line, err}
		}()
	}
	grep := func(pattern string) func() (string, error) {
		return func() (string, error) {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			res, err := c.Grep(cctx, dshsearch.GrepParams{Pattern: pattern})
			if err != nil {
				return "", err
			}
			var files []string
			for _, f := range res.Meta.Files {
				files = append(files, f.Path)
			}
			return fmt.Sprintf("%s in %s", strings.SplitN(res.Text, "\n", 2)[0], strings.Join(files, ", ")), nil
		}
	}

	started := time.Now()
	run("slow grep", func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, err := c.Grep(cctx, dshsearch.GrepParams{Pattern: slowPattern, Cwd: corpus})
		if err := expectCancelled(err, context.DeadlineExceeded); err != nil {
			return "", err
		}
		return fmt.Sprintf("context deadline exceeded after 1500 ms, answered after %d ms: %s",
			time.Since(started).Milliseconds(), describe(err)), nil
	})
	time.Sleep(50 * time.Millisecond) // let the slow search start first, so the others visibly overtake it
	run(`glob "**/*.js"`, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := c.Glob(cctx, dshsearch.GlobParams{Pattern: "**/*.js"})
		if err != nil {
			return "", err
		}
		return strings.Join(strings.Split(res.Text, "\n"), ", "), nil
	})
	run(`grep "TODO"`, grep("TODO"))
	run(`grep "export"`, grep("export"))
	run("ping", func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		answer, err := c.Ping(cctx)
		if err != nil {
			return "", err
		}
		body, err := json.Marshal(answer) // the daemon answers {}
		return string(body), err
	})
	wg.Wait()

	say("concurrent: %d requests from %d goroutines, answered in this order: %s", len(order), len(order), strings.Join(order, ", "))
	for _, name := range []string{`glob "**/*.js"`, `grep "TODO"`, `grep "export"`, "ping", "slow grep"} {
		o := outcomes[name]
		if o.err != nil {
			return fmt.Errorf("%s: %w", name, o.err)
		}
		say("%s: %s", name, o.line)
	}
	return nil
}

func expectCancelled(err error, cause error) error {
	var cancelled *dshsearch.CancelledError
	switch {
	case !errors.As(err, &cancelled):
		return fmt.Errorf("expected a cancelled call, got %v", err)
	case !errors.Is(err, cause):
		return fmt.Errorf("expected %v, got %v", cause, err)
	case cancelled.Reply == nil:
		return fmt.Errorf("the daemon did not answer the cancellation: %v", err)
	case cancelled.Reply.Code != dshsearch.RequestCancelled:
		return fmt.Errorf("expected error %d, got %v", dshsearch.RequestCancelled, cancelled.Reply)
	}
	return nil
}

// terminal feeds terminal output into the daemon's scrollback and searches it. Output arrives in chunks,
// with colours and CRLFs; the daemon keeps a sanitised copy per terminal session.
func terminal(ctx context.Context, c *dshsearch.Client) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const sessionID = "term-1"
	// A notification appends without an answer; a request returns the line count.
	if err := c.ScrollbackAppendNoWait(sessionID, "$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r"); err != nil {
		return err
	}
	appended, err := c.ScrollbackAppend(cctx, sessionID, "\nbuild failed\r\n$ make test\r\nerror: 2 tests failed\r\n")
	if err != nil {
		return fmt.Errorf("scrollback/append: %w", err)
	}
	say("scrollback/append: totalLines=%d truncated=%v", appended.TotalLines, appended.Truncated)
	found, err := c.TerminalSearch(cctx, dshsearch.TerminalSearchParams{SessionID: sessionID, Pattern: "error"})
	if err != nil {
		return fmt.Errorf("terminal_search: %w", err)
	}
	var lines []string
	for _, m := range found.Matches {
		lines = append(lines, fmt.Sprintf("[offset %d] %s", m.Offset, m.Line))
	}
	say(`terminal_search "error": %d matches: %s`, found.MatchCount, strings.Join(lines, " | "))
	if _, err := c.ScrollbackClose(cctx, sessionID); err != nil {
		return fmt.Errorf("scrollback/close: %w", err)
	}
	return nil
}

// -- a small tree to search, and a corpus that keeps ripgrep busy --------------------------------------

func writeDemoTree(root string) error {
	files := []struct{ name, text string }{
		{"src/app.js", "// TODO: wire the search\nconsole.log('hello');\n"},
		{"src/util.js", "export const add = (a, b) => a + b;\n"},
		{"docs/notes.md", "# Notes\n\nTODO: write the host guide\n"},
		{"README.md", "demo tree\n"},
	}
	mtime := time.Unix(1_700_000_000, 0)
	for _, f := range files {
		path := filepath.Join(root, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil { // glob lists oldest first: fix the order
			return err
		}
		mtime = mtime.Add(time.Minute)
	}
	return nil
}

func ensureSlowCorpus(root string, files, lines int) error {
	if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("slow-%d.txt", files-1))); err == nil {
		return nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	words := []string{"alpha", "beta", "gamma", "delta", "épsilon", "zeta", "ηta", "theta"}
	rnd := rand.New(rand.NewSource(1))
	var b strings.Builder
	for i := 0; i < lines; i++ {
		for w := 0; w < 8; w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rnd.Intn(len(words))])
		}
		b.WriteByte('\n')
	}
	text := []byte(b.String())
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("slow-%d.txt", i)), text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

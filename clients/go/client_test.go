package dshsearch

// Tests against the frozen executable named by DSH_SEARCH_EXE (scripts/test sets it; without it these
// tests skip, saying so). DSH_SLOW_CORPUS may name a directory that keeps ripgrep busy; otherwise one is
// generated. The notification tests run the test binary itself as a stand-in daemon (TestMain).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const slowPattern = `(?:\w+\W){1,20}?\w{9}\b`

func TestMain(m *testing.M) {
	if mode := os.Getenv("DSH_FAKE_DAEMON"); mode != "" {
		fakeDaemon(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func executable(t *testing.T) string {
	t.Helper()
	exe := os.Getenv("DSH_SEARCH_EXE")
	if exe == "" {
		t.Skip("set DSH_SEARCH_EXE to a built dsh-search (scripts/build) to run this test")
	}
	return exe
}

type fixture struct {
	exe, tree, tmp, spill string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{exe: executable(t), tree: filepath.Join(root, "tree"), tmp: filepath.Join(root, "tmp"), spill: filepath.Join(root, "spill")}
	files := []struct{ name, text string }{
		{"src/app.js", "// TODO: wire the search\nconsole.log('hello');\n"},
		{"src/util.js", "export const add = (a, b) => a + b;\n"},
		{"docs/notes.md", "# Notes\n\nTODO: write the host guide\n"},
		{"README.md", "demo tree\n"},
	}
	mtime := time.Unix(1_700_000_000, 0)
	for _, file := range files {
		path := filepath.Join(f.tree, filepath.FromSlash(file.name))
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(file.text), 0o644))
		must(t, os.Chtimes(path, mtime, mtime))
		mtime = mtime.Add(time.Minute)
	}
	must(t, os.MkdirAll(f.tmp, 0o755))
	return f
}

func (f *fixture) options() Options {
	return Options{
		Executable:               f.exe,
		SampleOverCapGlobResults: Bool(true),
		Workdir:                  f.tree,
		SpillDir:                 f.spill,
		// The daemon's TMPDIR, where the onefile launcher unpacks itself (and must clean up).
		Env: append(os.Environ(), "TMPDIR="+f.tmp),
	}
}

func (f *fixture) start(t *testing.T, opts Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _, _ = c.Close() })
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func closeCleanly(t *testing.T, c *Client) {
	t.Helper()
	state, err := c.Close()
	if err != nil || state == nil || state.ExitCode() != 0 {
		t.Fatalf("Close: state %v, err %v", state, err)
	}
}

var (
	corpusOnce sync.Once
	corpusDir  string
	corpusErr  error
)

func slowCorpus(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("DSH_SLOW_CORPUS"); dir != "" {
		return dir
	}
	corpusOnce.Do(func() {
		corpusDir, corpusErr = os.MkdirTemp("", "dsh-go-client-slow-")
		if corpusErr != nil {
			return
		}
		words := []string{"alpha", "beta", "gamma", "delta", "épsilon", "zeta", "ηta", "theta"}
		var b strings.Builder
		for i := 0; i < 400_000; i++ {
			for w := 0; w < 8; w++ {
				if w > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[(i*7+w*13+i/8)%len(words)])
			}
			b.WriteByte('\n')
		}
		for i := 0; i < 4 && corpusErr == nil; i++ {
			corpusErr = os.WriteFile(filepath.Join(corpusDir, fmt.Sprintf("slow-%d.txt", i)), []byte(b.String()), 0o644)
		}
	})
	must(t, corpusErr)
	return corpusDir
}

func ctx30() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func TestTypedResults(t *testing.T) {
	f := newFixture(t)
	c := f.start(t, f.options())
	ctx, cancel := ctx30()
	defer cancel()

	init := c.InitializeResult()
	if init.ServerInfo.Name != "dsh-search" || init.Ripgrep.Version != "15.2.0" || init.Config["sampleOverCapGlobResults"] != true {
		t.Fatalf("initialize: %+v", init)
	}
	glob, err := c.Glob(ctx, GlobParams{Pattern: "**/*.js"})
	must(t, err)
	if glob.Text != filepath.FromSlash("src/app.js\nsrc/util.js") || glob.Meta.Total != 2 || glob.Meta.Shape != "paths" || glob.Spill != nil {
		t.Fatalf("glob: %+v", glob)
	}
	grep, err := c.Grep(ctx, GrepParams{Pattern: "TODO"})
	must(t, err)
	if !strings.HasPrefix(grep.Text, "Found 2 matches") || len(grep.Meta.Files) != 2 || grep.Meta.Files[0].Path != filepath.FromSlash("docs/notes.md") {
		t.Fatalf("grep: %+v", grep)
	}
	if m := grep.Meta.Files[1].Matches[0]; m.LineNumber != 1 || m.Line != "// TODO: wire the search" {
		t.Fatalf("grep match: %+v", m)
	}
	other, err := c.Grep(ctx, GrepParams{Pattern: "export", Path: "src", Include: "*.js", Cwd: f.tree})
	must(t, err)
	if len(other.Meta.Files) != 1 || other.Meta.Files[0].Path != filepath.FromSlash("src/util.js") {
		t.Fatalf("grep with path/include: %+v", other)
	}

	appended, err := c.ScrollbackAppend(ctx, "term-1", "$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r")
	must(t, err)
	if appended.TotalLines != 3 {
		t.Fatalf("append: %+v", appended)
	}
	must(t, c.ScrollbackAppendNoWait("term-1", "\nbuild failed\r\n"))
	_, err = c.ScrollbackAppendBytes(ctx, "term-1", []byte("$ make test\r\nerror: 2 tests failed\r\n"))
	must(t, err)
	found, err := c.TerminalSearch(ctx, TerminalSearchParams{SessionID: "term-1", Pattern: "error"})
	must(t, err)
	if found.MatchCount != 2 || found.TotalLines != 6 || found.Matches[0] != (TerminalMatch{1, "error: 2 tests failed"}) ||
		found.Matches[1] != (TerminalMatch{4, "error: missing semicolon"}) {
		t.Fatalf("terminal_search: %+v", found)
	}
	regex, err := c.TerminalSearch(ctx, TerminalSearchParams{SessionID: "term-1", Pattern: `^\$ make\b`, Regex: true, Limit: 1})
	must(t, err)
	if regex.MatchCount != 2 || len(regex.Matches) != 1 || !regex.Truncated {
		t.Fatalf("regex terminal_search: %+v", regex)
	}
	page, err := c.ScrollbackRead(ctx, ScrollbackReadParams{SessionID: "term-1", Offset: 1, Count: 2})
	must(t, err)
	if page.Text != "$ make test\nerror: 2 tests failed" || page.LineEnd != 3 || page.TotalLines != 6 {
		t.Fatalf("scrollback/read: %+v", page)
	}
	if closed, err := c.ScrollbackClose(ctx, "term-1"); err != nil || !closed {
		t.Fatalf("scrollback/close: %v %v", closed, err)
	}

	tools, err := c.ToolsList(ctx)
	must(t, err)
	names := map[string]bool{}
	for _, tool := range tools {
		names[tool.Name] = true
	}
	if !names["glob"] || !names["grep"] {
		t.Fatalf("tools/list: %v", names)
	}
	mcp, err := c.CallTool(ctx, "grep", map[string]any{"pattern": "("}, "", "")
	must(t, err)
	if !mcp.IsError || !strings.HasPrefix(mcp.Content[0].Text, "Error: ") {
		t.Fatalf("tools/call: %+v", mcp)
	}
	pong, err := c.Ping(ctx)
	must(t, err)
	if pong == nil || len(pong) != 0 { // what the daemon answers: {}
		t.Fatalf("ping: %#v", pong)
	}
	if len(init.Guidance) == 0 || init.Guidance["grep"] == "" || init.Config["timeoutMs"] == nil {
		t.Fatalf("initialize: %+v", init)
	}
	if _, ok := init.Config["workdir"]; ok {
		t.Fatalf("the configuration has no workdir (as documented): %v", init.Config)
	}
	closeCleanly(t, c)
}

// The client's error table is the daemon's own: rpc.discover publishes each method's errors, and every
// kind and code in it must be in ErrorKinds() and the other way round.
func TestErrorKindsAreTheDaemons(t *testing.T) {
	f := newFixture(t)
	c := f.start(t, f.options())
	ctx, cancel := ctx30()
	defer cancel()
	var doc struct {
		Methods []struct {
			Name   string `json:"name"`
			Errors []struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"methods"`
	}
	must(t, c.Call(ctx, "rpc.discover", nil, &doc))
	published := map[string]int{}
	cancellable := 0
	for _, method := range doc.Methods {
		for _, e := range method.Errors {
			if e.Code == RequestCancelled {
				if e.Message != "Request cancelled" {
					t.Fatalf("%s: %+v", method.Name, e)
				}
				cancellable++
				continue
			}
			if code, seen := published[e.Message]; seen && code != e.Code {
				t.Fatalf("%s has two codes: %d and %d", e.Message, code, e.Code)
			}
			published[e.Message] = e.Code
		}
	}
	kinds := ErrorKinds()
	if cancellable == 0 || len(published) == 0 || len(kinds) != len(published) {
		t.Fatalf("rpc.discover publishes %v, the client has %v", published, kinds)
	}
	for kind, code := range published {
		if kinds[kind] != code {
			t.Fatalf("rpc.discover publishes %s = %d, the client has %v", kind, code, kinds)
		}
	}
	kinds[KindSearchFailed] = 0 // a copy: the table itself cannot be changed
	if ErrorKinds()[KindSearchFailed] != 1002 {
		t.Fatal("ErrorKinds() is not a copy")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	exe := executable(t)
	for _, opts := range []Options{
		{CancelWait: -time.Second},
		{ShutdownWait: -1},
		{ExitWait: -time.Millisecond},
		{TermWait: -time.Hour},
	} {
		opts.Executable = exe
		opts.SampleOverCapGlobResults = Bool(true)
		c, err := Start(context.Background(), opts)
		if err == nil {
			_, _ = c.Close()
			t.Fatalf("a negative wait was accepted: %+v", opts)
		}
		if !strings.Contains(err.Error(), "must not be negative") {
			t.Fatalf("error: %v", err)
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	c := f.start(t, f.options())
	ctx, cancel := ctx30()
	defer cancel()

	check := func(err error, kind string, code int) *Error {
		t.Helper()
		var rpcErr *Error
		if !errors.As(err, &rpcErr) || rpcErr.Kind() != kind || rpcErr.Code != code {
			t.Fatalf("expected %s (%d), got %v", kind, code, err)
		}
		return rpcErr
	}
	_, err := c.Grep(ctx, GrepParams{Pattern: "("})
	bad := check(err, KindSearchInvalidPattern, 1001)
	if !strings.HasPrefix(bad.Text(), "Error: grep pattern rejected by ripgrep: ") {
		t.Fatalf("text: %q", bad.Text())
	}
	_, err = c.Glob(ctx, GlobParams{Pattern: "*", Cwd: filepath.Join(f.tree, "missing")})
	check(err, KindSearchFailed, 1002)
	_, err = c.SpillRead(ctx, SpillReadParams{Locator: filepath.Join(f.tree, "README.md")})
	check(err, KindInvalidArgs, -32602)
	missing := check(c.Call(ctx, "no/such/method", nil, nil), "METHOD_NOT_FOUND", -32601)
	if missing.Text() != missing.Message || missing.Data != nil || string(missing.RawData) != `"no/such/method"` {
		t.Fatalf("envelope error: %+v", missing)
	}
	_, err = c.Ping(ctx)
	must(t, err)
}

func expectCancelled(t *testing.T, err error, cause error) {
	t.Helper()
	var cancelled *CancelledError
	switch {
	case !errors.As(err, &cancelled):
		t.Fatalf("expected a cancelled call, got %v", err)
	case !errors.Is(err, cause):
		t.Fatalf("expected %v, got %v", cause, err)
	case cancelled.Reply == nil:
		t.Fatalf("the daemon did not answer the cancellation: %v", err)
	case cancelled.Reply.Code != RequestCancelled || cancelled.Reply.Kind() != KindSearchAborted:
		t.Fatalf("expected -32800 SEARCH_ABORTED, got %v", cancelled.Reply)
	case cancelled.Reply.Text() != "Error: grep was aborted before completion (tool timeout or caller cancellation)":
		t.Fatalf("text: %q", cancelled.Reply.Text())
	}
}

// CancelReply finds the daemon's answer to a cancellation in what a call returned, wrapped or not.
func TestCancelReply(t *testing.T) {
	f := newFixture(t)
	corpus := slowCorpus(t)
	c := f.start(t, f.options())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Grep(ctx, GrepParams{Pattern: slowPattern, Cwd: corpus})
	reply := CancelReply(err)
	if reply == nil || reply.Code != RequestCancelled || reply.Kind() != KindSearchAborted ||
		reply.Text() != "Error: grep was aborted before completion (tool timeout or caller cancellation)" {
		t.Fatalf("CancelReply(%v) = %v", err, reply)
	}
	if wrapped := CancelReply(fmt.Errorf("the host gave up: %w", err)); wrapped != reply {
		t.Fatalf("wrapped: %v", wrapped)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v does not unwrap to the context's error", err)
	}
	if CancelReply(&Error{Code: RequestCancelled}) == nil || CancelReply(&Error{Code: 1002}) != nil ||
		CancelReply(errors.New("unrelated")) != nil || CancelReply(nil) != nil {
		t.Fatal("CancelReply of other errors")
	}
}

// OnProgress of a typed call gets the daemon's reports while it runs; here the first one ends the call.
func TestOnProgress(t *testing.T) {
	f := newFixture(t)
	corpus := slowCorpus(t)
	c := f.start(t, f.options())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var reports []Progress
	onProgress := func(p Progress) {
		mu.Lock()
		reports = append(reports, p)
		mu.Unlock()
		cancel() // the first report is enough
	}
	_, err := c.Grep(ctx, GrepParams{Pattern: slowPattern, Cwd: corpus, OnProgress: onProgress})
	expectCancelled(t, err, context.Canceled)
	mu.Lock()
	got := append([]Progress(nil), reports...)
	mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress report")
	}
	if got[0].Progress <= 0 || !progressMessage.MatchString(got[0].Message) {
		t.Fatalf("report: %+v", got[0])
	}
	quick, cancelQuick := ctx30()
	defer cancelQuick()
	globbed, err := c.Glob(quick, GlobParams{Pattern: "**/*.md", OnProgress: onProgress})
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if globbed.Meta.Total != 2 || len(reports) != len(got) { // fast: no report
		t.Fatalf("glob: %+v, %d reports", globbed.Meta, len(reports))
	}
}

var progressMessage = regexp.MustCompile(`^grep: (\d+ matches in \d+ files so far( \(walking the tree: .+\))?|waiting for a free search slot)$`)

// Options.CancelOnClose: Close cancels the calls still running instead of letting shutdown wait for them.
func TestCancelOnClose(t *testing.T) {
	f := newFixture(t)
	corpus := slowCorpus(t)
	running := make(chan struct{})
	var once sync.Once
	opts := f.options()
	opts.ShutdownWait = 120 * time.Second
	opts.CancelOnClose = true
	opts.OnNotification = func(method string, params json.RawMessage) {
		if method == "notifications/progress" {
			once.Do(func() { close(running) })
		}
	}
	c := f.start(t, opts)
	done := make(chan error, 1)
	go func() {
		params := map[string]any{"pattern": slowPattern, "cwd": corpus, "_meta": map[string]any{"progressToken": "close"}}
		done <- c.Call(context.Background(), "grep", params, nil)
	}()
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the search ended before Close: %v", err)
	}
	closeCleanly(t, c)
	err := <-done
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != RequestCancelled || rpcErr.Kind() != KindSearchAborted {
		t.Fatalf("expected the daemon's -32800 answer, got %v", err)
	}
	if CancelReply(err) != rpcErr {
		t.Fatalf("CancelReply: %v", CancelReply(err))
	}
}

func TestContextCancellation(t *testing.T) {
	f := newFixture(t)
	corpus := slowCorpus(t)
	c := f.start(t, f.options())

	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(500*time.Millisecond, cancel)
	_, err := c.Grep(ctx, GrepParams{Pattern: slowPattern, Cwd: corpus})
	timer.Stop()
	expectCancelled(t, err, context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = c.Grep(ctx, GrepParams{Pattern: slowPattern, Cwd: corpus})
	cancel()
	expectCancelled(t, err, context.DeadlineExceeded)
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d calls still pending", n)
	}

	// Concurrent calls from goroutines: the quick ones are answered while a slow one runs.
	slowCtx, slowCancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer slowCancel()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := c.Grep(slowCtx, GrepParams{Pattern: slowPattern, Cwd: corpus})
		if !errors.Is(err, context.DeadlineExceeded) {
			errs <- fmt.Errorf("slow grep: %v", err)
		}
	}()
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := ctx30()
			defer cancel()
			res, err := c.Glob(ctx, GlobParams{Pattern: "**/*.md"})
			if err != nil || res.Meta.Total != 2 {
				errs <- fmt.Errorf("glob %d: %v %+v", i, err, res)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	closeCleanly(t, c)
}

func TestSpillPager(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	must(t, os.WriteFile(filepath.Join(f.tree, "many.txt"), []byte(b.String()), 0o644))
	c := f.start(t, f.options())
	ctx, cancel := ctx30()
	defer cancel()

	found, err := c.Grep(ctx, GrepParams{Pattern: "^hit", Include: "many.txt"})
	must(t, err)
	if found.Spill == nil || found.Meta.Total != 600 || !found.Meta.Truncated {
		t.Fatalf("expected a capped grep with a spill: %+v", found.Meta)
	}
	pager := c.SpillPager(found.Spill.Locator, 100)
	var pages []*SpillPage
	for {
		page, err := pager.Next(ctx)
		if err == io.EOF {
			break
		}
		must(t, err)
		if page.StartLine != 1+100*len(pages) {
			t.Fatalf("page %d starts at %d", len(pages), page.StartLine)
		}
		pages = append(pages, page)
	}
	if len(pages) < 2 {
		t.Fatalf("%d pages", len(pages))
	}
	var texts []string
	for _, p := range pages {
		texts = append(texts, p.Text)
	}
	all := strings.Join(texts, "\n")
	if n := len(strings.Split(all, "\n")); n != pages[len(pages)-1].TotalLines {
		t.Fatalf("%d lines, total %d", n, pages[len(pages)-1].TotalLines)
	}
	for i := 0; i < 600; i++ {
		if !strings.Contains(all, fmt.Sprintf("hit %d\n", i)) && !strings.HasSuffix(all, fmt.Sprintf("hit %d", i)) {
			t.Fatalf("hit %d missing from the spill", i)
		}
	}
}

func TestAnswersLongerThan64KiB(t *testing.T) {
	f := newFixture(t)
	long := "NEEDLE " + strings.Repeat("x", 300_000)
	must(t, os.WriteFile(filepath.Join(f.tree, "long.txt"), []byte(long+"\n"), 0o644))
	opts := f.options()
	opts.Args = []string{"--grep-max-line-bytes", "1000000", "--search-meta-max-bytes", "4000000"}
	c := f.start(t, opts)
	ctx, cancel := ctx30()
	defer cancel()
	found, err := c.Grep(ctx, GrepParams{Pattern: "NEEDLE", Include: "long.txt"})
	must(t, err)
	if got := found.Meta.Files[0].Matches[0].Line; got != long {
		t.Fatalf("line of %d bytes, want %d", len(got), len(long))
	}
	_, err = c.ScrollbackAppend(ctx, "big", long+"\n")
	must(t, err)
	page, err := c.ScrollbackRead(ctx, ScrollbackReadParams{SessionID: "big", Offset: 1, Count: 1})
	must(t, err)
	if page.Text != long {
		t.Fatalf("scrollback line of %d bytes", len(page.Text))
	}
}

func TestCloseLeavesNothingBehind(t *testing.T) {
	f := newFixture(t)
	c := f.start(t, f.options())
	pid := c.Pid()
	ctx, cancel := ctx30()
	defer cancel()
	_, err := c.Ping(ctx)
	must(t, err)
	closeCleanly(t, c)
	closeCleanly(t, c) // idempotent
	if !processGone(pid) {
		t.Fatalf("daemon %d still there", pid)
	}
	if _, err := c.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("ping after Close: %v", err)
	}
	entries, err := os.ReadDir(f.tmp)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("left in TMPDIR: %v", entries) // the launcher removes its _MEI* directory
	}
}

func TestCloseWithASearchRunning(t *testing.T) {
	f := newFixture(t)
	corpus := slowCorpus(t)
	opts := f.options()
	opts.ShutdownWait = 500 * time.Millisecond
	c := f.start(t, opts)
	done := make(chan error, 1)
	go func() {
		_, err := c.Grep(context.Background(), GrepParams{Pattern: slowPattern, Cwd: corpus})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	closeCleanly(t, c)
	err := <-done
	var rpcErr *Error
	if !(errors.As(err, &rpcErr) && rpcErr.Kind() == KindSearchAborted) && !errors.Is(err, ErrClosed) {
		t.Fatalf("the running search ended with %v", err)
	}
}

func TestStartupError(t *testing.T) {
	f := newFixture(t)
	lonely := filepath.Join(t.TempDir(), executableName)
	data, err := os.ReadFile(f.exe)
	must(t, err)
	must(t, os.WriteFile(lonely, data, 0o755))
	opts := f.options()
	opts.Executable = lonely
	opts.Stderr = io.Discard
	_, err = Start(context.Background(), opts)
	var startup *StartupError
	if !errors.As(err, &startup) || !errors.Is(err, ErrClosed) || startup.ExitCode() != 3 {
		t.Fatalf("expected a StartupError with status 3, got %v", err)
	}
	if want := "dsh-search: ripgrep sidecar " + sidecarOf(lonely) + " is missing"; !strings.Contains(startup.Stderr, want) {
		t.Fatalf("stderr %q lacks %q", startup.Stderr, want)
	}
	if !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "sidecar") {
		t.Fatalf("message: %v", err)
	}

	opts = f.options()
	opts.SampleOverCapGlobResults = nil
	if _, err = Start(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("expected the client to insist on SampleOverCapGlobResults, got %v", err)
	}
	opts.Args = []string{"--timeout-ms", "0", "--sample-over-cap-glob-results", "true"}
	opts.Stderr = io.Discard
	_, err = Start(context.Background(), opts)
	if !errors.As(err, &startup) || startup.ExitCode() != 2 || !strings.Contains(startup.Stderr, "timeoutMs") {
		t.Fatalf("expected a StartupError with status 2, got %v", err)
	}
}

func TestFindExecutable(t *testing.T) {
	exe := executable(t)
	t.Setenv("DSH_SEARCH_EXE", "")
	t.Setenv("PATH", "/nonexistent"+string(os.PathListSeparator)+filepath.Dir(exe))
	found, err := FindExecutable("")
	want, _ := filepath.Abs(filepath.Join(filepath.Dir(exe), executableName))
	if err != nil || found != want {
		t.Fatalf("PATH lookup: %q %v, want %q", found, err, want)
	}
	t.Setenv("DSH_SEARCH_EXE", "/y/dsh-search")
	if found, _ := FindExecutable(""); found != abs(t, "/y/dsh-search") {
		t.Fatalf("DSH_SEARCH_EXE: %q", found)
	}
	if found, _ := FindExecutable("/x/dsh-search"); found != abs(t, "/x/dsh-search") {
		t.Fatalf("explicit: %q", found)
	}
	t.Setenv("DSH_SEARCH_EXE", "")
	t.Setenv("PATH", "/nonexistent")
	if _, err := FindExecutable(""); err == nil || !strings.Contains(err.Error(), "DSH_SEARCH_EXE") {
		t.Fatalf("expected not found, got %v", err)
	}
}

// -- a stand-in daemon, for what the real one does not send yet --------------------------------------------

func fakeOptions(t *testing.T, mode string) Options {
	self, err := os.Executable()
	must(t, err)
	return Options{
		Executable:               self,
		SampleOverCapGlobResults: Bool(true),
		Env:                      append(os.Environ(), "DSH_FAKE_DAEMON="+mode),
		CancelWait:               300 * time.Millisecond,
	}
}

// fakeDaemon speaks NDJSON on stdin/stdout: it sends notifications (progress, log message,
// tools/list_changed) and a request to the client around its answers, and in "silent" mode never answers
// grep, not even when cancelled.
func fakeDaemon(mode string) {
	out := bufio.NewWriter(os.Stdout)
	send := func(msg map[string]any) {
		body, _ := json.Marshal(msg)
		out.Write(append(body, '\n'))
		out.Flush()
	}
	in := bufio.NewReader(os.Stdin)
	var answered json.RawMessage
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var msg incoming
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "exit":
			return
		case len(msg.ID) == 0:
			continue // another notification
		case msg.Method == "":
			answered = line // the client's answer to our request
			continue
		}
		send(map[string]any{"jsonrpc": "2.0", "method": "$/progress", "params": map[string]any{"token": 1}})
		send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		var params struct {
			Meta struct {
				ProgressToken any `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(msg.Params, &params) == nil && params.Meta.ProgressToken != nil {
			// One report for someone else, one for this call.
			for _, report := range [][2]any{{"someone-else", "not yours"}, {params.Meta.ProgressToken, msg.Method}} {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": report[0], "progress": 1, "message": report[1]}})
			}
		}
		var result any = map[string]any{}
		switch msg.Method {
		case "initialize":
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"data": "hi"}})
			send(map[string]any{"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
		case "test/answered":
			result = answered
		case "grep":
			if mode == "silent" {
				continue
			}
		case "shutdown":
			result = nil
		}
		send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}
}

func TestNotificationsAndServerRequests(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	opts := fakeOptions(t, "silent")
	opts.OnNotification = func(method string, params json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, method)
	}
	ctx, cancel := ctx30()
	defer cancel()
	c, err := Start(ctx, opts)
	must(t, err)
	defer c.Close()
	_, err = c.Ping(ctx)
	must(t, err)
	var answer struct {
		ID    string `json:"id"`
		Error *Error `json:"error"`
	}
	must(t, c.Call(ctx, "test/answered", nil, &answer))
	if answer.ID != "srv-1" || answer.Error == nil || answer.Error.Code != -32601 {
		t.Fatalf("the client's answer to roots/list: %+v", answer)
	}
	mu.Lock()
	joined := strings.Join(seen, " ")
	mu.Unlock()
	for _, want := range []string{"notifications/message", "$/progress", "notifications/tools/list_changed"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("notification %s not seen in %q", want, joined)
		}
	}

	// OnProgress of a typed call sees the reports for its own token only; OnNotification sees them all.
	for method, call := range map[string]func(func(Progress)) error{
		"glob": func(on func(Progress)) error {
			_, err := c.Glob(ctx, GlobParams{Pattern: "*", OnProgress: on})
			return err
		},
		"terminal_search": func(on func(Progress)) error {
			_, err := c.TerminalSearch(ctx, TerminalSearchParams{SessionID: "t", Pattern: "x", OnProgress: on})
			return err
		},
	} {
		var reports []Progress
		must(t, call(func(p Progress) { reports = append(reports, p) }))
		if len(reports) != 1 || reports[0] != (Progress{Progress: 1, Message: method}) {
			t.Fatalf("%s: reports %+v", method, reports)
		}
	}
	mu.Lock()
	if n := strings.Count(strings.Join(seen, " "), "notifications/progress"); n < 4 {
		t.Fatalf("OnNotification saw %d progress reports: %v", n, seen)
	}
	mu.Unlock()

	// A cancellation the daemon never answers: CancelWait bounds the wait.
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	started := time.Now()
	_, err = c.Grep(short, GrepParams{Pattern: "x"})
	var cancelled *CancelledError
	if !errors.As(err, &cancelled) || cancelled.Reply != nil || time.Since(started) > 5*time.Second {
		t.Fatalf("expected an unanswered cancellation, got %v after %v", err, time.Since(started))
	}
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
	state, err := c.Close()
	if err != nil || state.ExitCode() != 0 {
		t.Fatalf("Close: %v %v", state, err)
	}
}

// abs is filepath.Abs: on Windows a path without a drive is on the current one.
func abs(t *testing.T, path string) string {
	found, err := filepath.Abs(path)
	must(t, err)
	return found
}

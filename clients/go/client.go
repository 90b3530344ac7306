package dshsearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RequestCancelled is the JSON-RPC error code of a request cancelled with `$/cancelRequest` (LSP's).
const RequestCancelled = -32800

// The failure kinds of tool methods (Error.Kind()).
const (
	KindInvalidArgs             = "INVALID_ARGS"
	KindSearchInvalidPattern    = "SEARCH_INVALID_PATTERN"
	KindSearchFailed            = "SEARCH_FAILED"
	KindSearchRawOutputOverflow = "SEARCH_RAW_OUTPUT_OVERFLOW"
	KindSearchAborted           = "SEARCH_ABORTED"
)

// errorKinds is the daemon's own table of failure kinds and their JSON-RPC codes
// (daemon/dsh_search/methods/errors.py), as its rpc.discover publishes it; the tests check it against a
// running daemon.
var errorKinds = map[string]int{
	KindInvalidArgs:             -32602,
	KindSearchInvalidPattern:    1001,
	KindSearchFailed:            1002,
	KindSearchRawOutputOverflow: 1003,
	KindSearchAborted:           1004,
}

// ErrorKinds returns (a copy of) the failure kinds of tool methods and their JSON-RPC codes:
// INVALID_ARGS -32602, SEARCH_INVALID_PATTERN 1001, SEARCH_FAILED 1002, SEARCH_RAW_OUTPUT_OVERFLOW 1003,
// SEARCH_ABORTED 1004 (-32800 instead for a request cancelled with $/cancelRequest).
func ErrorKinds() map[string]int {
	kinds := make(map[string]int, len(errorKinds))
	for kind, code := range errorKinds {
		kinds[kind] = code
	}
	return kinds
}

// Names for envelope errors, which carry no data.code.
var envelopeKinds = map[int]string{
	-32700:           "PARSE_ERROR",
	-32600:           "INVALID_REQUEST",
	-32601:           "METHOD_NOT_FOUND",
	-32602:           "INVALID_PARAMS",
	-32603:           "INTERNAL_ERROR",
	RequestCancelled: "REQUEST_CANCELLED",
}

var exitHints = map[int]string{
	2:   "invalid configuration",
	3:   "the ripgrep sidecar dsh-search-rg is missing or unusable",
	127: "the launcher could not run what it unpacked into $TMPDIR (a noexec mount?)",
}

// Through a launcher the status is the channel's: the far side's daemon's, or the launcher's own failure.
var launcherExitHints = map[int]string{
	2:   exitHints[2],
	3:   exitHints[3],
	126: "the far side found the executable but could not run it",
	127: "the far side found no such executable (is it on the PATH a non-interactive session gets?), or its launcher could not run what it unpacked into $TMPDIR",
	255: "the launcher could not reach the far side (ssh's own failures exit 255)",
}

// ErrClosed means the daemon's stdout ended (it exited) before the answer came, or the client was closed.
var ErrClosed = errors.New("dsh-search: connection closed")

// Error is a JSON-RPC error answer. For tool methods Data is set: Data.Text ("Error: …") is what a model
// should be shown, Data.Code the failure kind. Envelope errors have no such data (RawData keeps whatever
// they carry, e.g. the method name of a -32601).
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    *ErrorData      `json:"data,omitempty"`
	RawData json.RawMessage `json:"-"`
}

// UnmarshalJSON accepts any `data`; Data is set only when it is a tool method's {code, text}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var raw struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Code, e.Message, e.RawData, e.Data = raw.Code, raw.Message, raw.Data, nil
	var data ErrorData
	if bytes.HasPrefix(bytes.TrimSpace(raw.Data), []byte("{")) && json.Unmarshal(raw.Data, &data) == nil {
		e.Data = &data
	}
	return nil
}

// ErrorData is the data of a tool method's error.
type ErrorData struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

// Kind is the failure kind to branch on: Data.Code (KindSearchFailed, …) or, for envelope errors, a name
// for the numeric code (METHOD_NOT_FOUND, …).
func (e *Error) Kind() string {
	if e.Data != nil && e.Data.Code != "" {
		return e.Data.Code
	}
	if kind, ok := envelopeKinds[e.Code]; ok {
		return kind
	}
	return "ERROR_" + strconv.Itoa(e.Code)
}

// Text is Data.Text, exactly what a model should be shown, or the message when there is no data.
func (e *Error) Text() string {
	if e.Data != nil && e.Data.Text != "" {
		return e.Data.Text
	}
	return e.Message
}

func (e *Error) Error() string { return fmt.Sprintf("error %d %s: %s", e.Code, e.Kind(), e.Text()) }

// CancelledError is returned when the caller's context ended first. It unwraps to the context's error
// (context.Canceled or context.DeadlineExceeded); Reply is the daemon's answer to the cancellation
// (normally a -32800 error), or nil if it did not come within Options.CancelWait.
type CancelledError struct {
	Cause error
	Reply *Error
}

func (e *CancelledError) Error() string {
	if e.Reply != nil {
		return fmt.Sprintf("%v (daemon: %v)", e.Cause, e.Reply)
	}
	return e.Cause.Error()
}

func (e *CancelledError) Unwrap() error { return e.Cause }

// CancelReply is the daemon's answer to a cancelled call (Code -32800, Kind() SEARCH_ABORTED, Text() for the
// model), found in what the call returned: a *CancelledError's Reply (the call's context ended), an *Error
// that is that answer (a call cancelled by Close with Options.CancelOnClose), or either wrapped. Nil if there
// is none: not a cancellation, or the daemon did not answer within Options.CancelWait.
func CancelReply(err error) *Error {
	var cancelled *CancelledError
	if errors.As(err, &cancelled) {
		return cancelled.Reply
	}
	var rpcErr *Error
	if errors.As(err, &rpcErr) && rpcErr.Code == RequestCancelled {
		return rpcErr
	}
	return nil
}

// StartupError is returned by Start when the daemon exits before answering initialize. Exit status 3: the
// ripgrep sidecar is missing or broken (a broken installation: reinstall, do not retry); 2: invalid
// configuration. Stderr holds the daemon's last stderr lines when Options.Stderr is not an *os.File.
// It unwraps to ErrClosed.
type StartupError struct {
	State    *os.ProcessState // nil if the daemon was still running
	Stderr   string
	launched bool // through a launcher: its status is the channel's
}

// ExitCode is the daemon's exit status, or -1.
func (e *StartupError) ExitCode() int {
	if e.State == nil {
		return -1
	}
	return e.State.ExitCode()
}

func (e *StartupError) Error() string {
	hints := exitHints
	if e.launched {
		hints = launcherExitHints
	}
	what := "stopped talking"
	if e.State != nil {
		what = "exited with status " + strconv.Itoa(e.State.ExitCode())
		if ws, ok := e.State.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			what = "was killed by " + ws.Signal().String()
		}
	}
	msg := "dsh-search " + what + " before answering initialize"
	if hint, ok := hints[e.ExitCode()]; ok {
		msg += " (" + hint + ")"
	}
	if tail := strings.TrimSpace(e.Stderr); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func (e *StartupError) Unwrap() error { return ErrClosed }

// Options configure Start. SampleOverCapGlobResults is required unless Args set the flag or a --config.
type Options struct {
	// Executable is the daemon; "" means FindExecutable(""). With a Launcher, its path (or a name on the
	// PATH) on the far side, default "dsh-search", not looked up here.
	Executable string
	// Launcher is a command prefix, as an argv (never a shell string), that starts the daemon on the far
	// side of a channel: {"ssh", "-T", "-o", "BatchMode=yes", "user@host"}, {"docker", "exec", "-i", "ctr"},
	// {"kubectl", "exec", "-i", "pod", "--"}, {"podman", "exec", "-i", "ctr"}, {"wsl.exe", "--exec"}.
	Launcher []string
	// LauncherQuote is how the daemon's argv goes through the Launcher: QuoteAuto (""), QuoteShell or
	// QuoteNone.
	LauncherQuote string
	// Remote passes --remote true (the daemon's paths are not the host's); nil means: when there is a
	// Launcher.
	Remote *bool
	// Install, with a Launcher, first puts this build (a directory holding dsh-search and dsh-search-rg
	// built for the far side's platform) on the far side through it, and runs that (see Install).
	Install string
	// SampleOverCapGlobResults: how an over-cap glob is ordered (an explicit choice the daemon requires).
	SampleOverCapGlobResults *bool
	// Workdir is --workdir, the default cwd of searches; SpillDir is --spill-dir.
	Workdir, SpillDir string
	// Args are further flags (--timeout-ms, --config FILE, …).
	Args []string
	// Env is the daemon's whole environment; nil means this process's.
	Env []string
	// Stderr receives the daemon's logs and its one-line start-up errors; nil means os.Stderr. A writer
	// that is not an *os.File (io.Discard, a buffer) is fed through a pipe, and the last lines are kept
	// for StartupError.Stderr.
	Stderr io.Writer
	// OnNotification is called (from the reader goroutine: return quickly) for every notification the
	// daemon sends: progress, log messages, notifications/tools/list_changed, … Nil ignores them.
	OnNotification func(method string, params json.RawMessage)
	// Log receives protocol oddities (answers nobody waits for, unparsable lines); nil discards them.
	Log func(format string, args ...any)
	// SkipInitialize leaves the initialize request to the caller.
	SkipInitialize bool
	// ClientName and ClientVersion are sent as initialize's clientInfo.
	ClientName, ClientVersion string
	// CancelWait bounds how long a cancelled call waits for the daemon's -32800 answer (default 5 s).
	CancelWait time.Duration
	// ShutdownWait bounds Close's shutdown request, which waits for running searches (default 10 s);
	// ExitWait the wait for the exit after stdin is closed (default 5 s); TermWait the wait after SIGTERM
	// (default 6 s: the daemon needs graceMs + 1 s). SIGKILL comes only after all of them. Zero means the
	// default; a negative wait is an error.
	ShutdownWait, ExitWait, TermWait time.Duration
	// CancelOnClose makes Close cancel the calls still running ($/cancelRequest each; they return the
	// daemon's -32800 answer) instead of letting shutdown wait for them.
	CancelOnClose bool
}

// Bool returns a pointer to b, for Options.SampleOverCapGlobResults.
func Bool(b bool) *bool { return &b }

type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// Client is one daemon process and a JSON-RPC session with it. Its methods are safe for concurrent use.
type Client struct {
	opts    Options
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	writeMu sync.Mutex
	nextID  atomic.Int64

	mu        sync.Mutex
	pending   map[int64]chan *incoming
	abandoned map[int64]bool // cancelled calls whose late answers are dropped quietly
	progress  map[string]func(Progress)
	tokens    atomic.Int64

	stderrMu   sync.Mutex
	stderrTail []string
	stderrDone chan struct{}

	readDone chan struct{} // closed when the daemon's stdout ends
	exited   chan struct{} // closed when the process has been waited for
	state    *os.ProcessState

	closed    atomic.Bool
	shutDown  atomic.Bool
	closeOnce sync.Once
	closeErr  error

	init *InitializeResult
}

// FindExecutable returns the dsh-search executable as an absolute path: explicit if not empty, else
// $DSH_SEARCH_EXE, else dsh-search. A path with a directory in it is taken relative to the current
// directory; a bare name is looked up on PATH, never in the current directory (a PATH entry that is
// relative, such as "." or "", finds nothing: exec.ErrDot).
func FindExecutable(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv("DSH_SEARCH_EXE")
	}
	if explicit == "" {
		explicit = "dsh-search"
	}
	if !strings.ContainsAny(explicit, `/`+string(filepath.Separator)) {
		found, err := exec.LookPath(explicit)
		if err == nil && !filepath.IsAbs(found) {
			err = fmt.Errorf("%s is in a relative PATH entry (%s)", explicit, found)
		}
		if err != nil {
			return "", fmt.Errorf("%s not found on PATH (pass its path, set DSH_SEARCH_EXE, or put it on PATH): %w", explicit, err)
		}
		explicit = found
	}
	return filepath.Abs(explicit)
}

// Start runs the daemon with NDJSON framing and, unless Options.SkipInitialize, initializes the session
// (ctx bounds that). If the daemon exits before answering, the error is a *StartupError.
func Start(ctx context.Context, opts Options) (*Client, error) {
	for _, wait := range []struct {
		name string
		d    time.Duration
	}{{"CancelWait", opts.CancelWait}, {"ShutdownWait", opts.ShutdownWait}, {"ExitWait", opts.ExitWait}, {"TermWait", opts.TermWait}} {
		if wait.d < 0 {
			return nil, fmt.Errorf("dsh-search: Options.%s must not be negative (zero means the default), not %v", wait.name, wait.d)
		}
	}
	if opts.CancelWait <= 0 {
		opts.CancelWait = 5 * time.Second
	}
	if opts.ShutdownWait <= 0 {
		opts.ShutdownWait = 10 * time.Second
	}
	if opts.ExitWait <= 0 {
		opts.ExitWait = 5 * time.Second
	}
	if opts.TermWait <= 0 {
		opts.TermWait = 6 * time.Second
	}
	if err := checkLauncher(opts.Launcher, opts.LauncherQuote); err != nil {
		return nil, err
	}
	if opts.SampleOverCapGlobResults == nil && !hasFlag(opts.Args, "--sample-over-cap-glob-results", "--config") {
		return nil, errors.New("dsh-search: Options.SampleOverCapGlobResults is required (or pass the flag or --config in Args)")
	}
	var exe string
	var err error
	switch {
	case opts.Install != "" && len(opts.Launcher) == 0:
		return nil, errors.New("dsh-search: Options.Install needs a Launcher: it puts the build on the far side of the launcher")
	case opts.Install != "" && opts.Executable != "":
		return nil, errors.New("dsh-search: set Options.Executable or Options.Install, not both: Install runs the build it installed")
	case opts.Install != "":
		exe, err = Install(ctx, InstallOptions{Launcher: opts.Launcher, LauncherQuote: opts.LauncherQuote, Build: opts.Install, Env: opts.Env})
	case len(opts.Launcher) > 0:
		exe = opts.Executable // the far side's path, or a name on its PATH: not looked up here
		if exe == "" {
			exe = "dsh-search"
		}
	default:
		exe, err = FindExecutable(opts.Executable)
	}
	if err != nil {
		return nil, err
	}
	args := []string{"--framing", "ndjson"}
	if opts.SampleOverCapGlobResults != nil {
		args = append(args, "--sample-over-cap-glob-results", strconv.FormatBool(*opts.SampleOverCapGlobResults))
	}
	if opts.Workdir != "" {
		args = append(args, "--workdir="+opts.Workdir) // one argument: a directory may start with "-"
	}
	if opts.SpillDir != "" {
		args = append(args, "--spill-dir="+opts.SpillDir)
	}
	if (opts.Remote == nil && len(opts.Launcher) > 0) || (opts.Remote != nil && *opts.Remote) {
		args = append(args, "--remote", "true")
	}
	args = append(args, opts.Args...)
	argv := LaunchCommand(opts.Launcher, opts.LauncherQuote, exe, args)

	c := &Client{
		opts:       opts,
		pending:    map[int64]chan *incoming{},
		abandoned:  map[int64]bool{},
		progress:   map[string]func(Progress){},
		readDone:   make(chan struct{}),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	if err := c.spawn(argv[0], argv[1:]); err != nil {
		return nil, err
	}
	if opts.SkipInitialize {
		return c, nil
	}
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name, version = "dsh-search-client-go", "0.1.0"
	}
	var init InitializeResult
	err = c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": name, "version": version},
	}, &init)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			state := c.waitState(opts.ExitWait)
			_, _ = c.Close()
			<-c.stderrDone
			return nil, &StartupError{State: state, Stderr: c.StderrTail(), launched: len(opts.Launcher) > 0}
		}
		_, _ = c.Close()
		return nil, err
	}
	c.init = &init
	return c, nil
}

func hasFlag(args []string, names ...string) bool {
	for _, arg := range args {
		for _, name := range names {
			if arg == name || strings.HasPrefix(arg, name+"=") {
				return true
			}
		}
	}
	return false
}

// spawn starts the process. The pipes are *os.File values made here rather than cmd.StdinPipe/StdoutPipe:
// then exec copies nothing in goroutines and cmd.Wait neither waits for nor closes them, so a goroutine can
// Wait at once and the exit is observed even while a reader still holds stdout. os.Pipe makes them
// close-on-exec, so no other child of this process inherits a copy: when this process dies, the daemon
// sees EOF on stdin and a closed stdout, and exits.
func (c *Client) spawn(exe string, args []string) error {
	cmd := exec.Command(exe, args...)
	cmd.Env = c.opts.Env
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	var errR, errW *os.File
	switch w := c.opts.Stderr.(type) {
	case nil:
		cmd.Stderr = os.Stderr
	case *os.File:
		cmd.Stderr = w
	default:
		if errR, errW, err = os.Pipe(); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return err
		}
		cmd.Stderr = errW
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child has its own copies now
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		return err
	}
	c.cmd, c.stdin, c.stdout = cmd, inW, outR
	go c.readLoop(outR)
	if errR != nil {
		go c.stderrLoop(errR, c.opts.Stderr)
	} else {
		close(c.stderrDone)
	}
	go func() {
		_ = cmd.Wait() // the status is in cmd.ProcessState
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	return nil
}

// Pid is the process id of the daemon (with PyInstaller onefile: of its launcher); with Options.Launcher, the
// launcher's (ssh's, docker's, …): a signal to it ends the channel, and so the daemon.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Exited is closed once the daemon process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// State is the exit status; valid after Exited is closed.
func (c *Client) State() *os.ProcessState {
	select {
	case <-c.exited:
		return c.state
	default:
		return nil
	}
}

// InitializeResult is the daemon's answer to initialize (nil with Options.SkipInitialize).
func (c *Client) InitializeResult() *InitializeResult { return c.init }

// StderrTail is the daemon's last stderr lines (only when Options.Stderr is not an *os.File).
func (c *Client) StderrTail() string {
	c.stderrMu.Lock()
	defer c.stderrMu.Unlock()
	return strings.Join(c.stderrTail, "")
}

// Pending is the number of calls waiting for an answer.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func (c *Client) logf(format string, args ...any) {
	if c.opts.Log != nil {
		c.opts.Log(format, args...)
	}
}

func (c *Client) stderrLoop(r *os.File, w io.Writer) {
	defer close(c.stderrDone)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			_, _ = io.WriteString(w, line)
			c.stderrMu.Lock()
			c.stderrTail = append(c.stderrTail, line)
			if len(c.stderrTail) > 200 {
				c.stderrTail = c.stderrTail[len(c.stderrTail)-200:]
			}
			c.stderrMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (c *Client) readLoop(out *os.File) {
	defer out.Close()
	defer close(c.readDone)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n') // no line-length limit (bufio.Scanner stops at 64 KiB by default)
		if len(bytes.TrimSpace(line)) > 0 {
			c.deliver(line)
		}
		if err != nil {
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				c.logf("reading daemon stdout: %v", err)
			}
			return
		}
	}
}

func (c *Client) deliver(line []byte) {
	var batch []incoming
	if trimmed := bytes.TrimSpace(line); bytes.HasPrefix(trimmed, []byte("[")) {
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			c.logf("unparsable batch from daemon: %v", err)
			return
		}
	} else {
		var one incoming
		if err := json.Unmarshal(trimmed, &one); err != nil {
			// Valid JSON of an unexpected shape: fail the call it answers rather than leave it waiting.
			var id struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(trimmed, &id) != nil || len(id.ID) == 0 {
				c.logf("unparsable message from daemon: %v", err)
				return
			}
			one = incoming{ID: id.ID, Error: &Error{Code: -32603, Message: "dsh-search client: unreadable answer: " + err.Error()}}
		}
		batch = []incoming{one}
	}
	for i := range batch {
		msg := &batch[i]
		if msg.Method != "" {
			c.handleIncoming(msg)
			continue
		}
		id, err := strconv.ParseInt(string(msg.ID), 10, 64)
		if err != nil { // id null: the daemon could not read one of our messages
			c.logf("answer without a usable id: %v", msg.Error)
			continue
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		late := c.abandoned[id]
		delete(c.abandoned, id)
		c.mu.Unlock()
		if ch == nil {
			if !late {
				c.logf("answer for id %d that nobody waits for", id)
			}
			continue
		}
		ch <- msg // buffered: never blocks
	}
}

// handleIncoming: a notification goes to Options.OnNotification; a request from the daemon is answered
// "method not found" (this client serves none).
func (c *Client) handleIncoming(msg *incoming) {
	if len(msg.ID) > 0 && string(msg.ID) != "null" {
		reply := map[string]any{
			"jsonrpc": "2.0",
			"id":      msg.ID,
			"error":   map[string]any{"code": -32601, "message": "method not found: " + msg.Method},
		}
		if err := c.write(reply); err != nil {
			c.logf("answering %s: %v", msg.Method, err)
		}
		return
	}
	if msg.Method == "notifications/progress" {
		c.reportProgress(msg.Params)
	}
	if c.opts.OnNotification != nil {
		c.opts.OnNotification(msg.Method, msg.Params)
	}
}

func (c *Client) reportProgress(params json.RawMessage) {
	var report struct {
		Token any `json:"progressToken"`
		Progress
	}
	if json.Unmarshal(params, &report) != nil {
		return
	}
	token, _ := report.Token.(string)
	c.mu.Lock()
	onProgress := c.progress[token]
	c.mu.Unlock()
	if onProgress != nil {
		onProgress(report.Progress)
	}
}

// search is a typed search; with onProgress, the call asks for progress (_meta.progressToken) and the
// daemon's reports for it go to onProgress until the call returns.
func (c *Client) search(ctx context.Context, method string, params any, onProgress func(Progress), out any) error {
	if onProgress == nil {
		return c.Call(ctx, method, params, out)
	}
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return err
	}
	token := "dshsearch-" + strconv.FormatInt(c.tokens.Add(1), 10)
	fields["_meta"], _ = json.Marshal(map[string]string{"progressToken": token})
	c.mu.Lock()
	c.progress[token] = onProgress
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.progress, token)
		c.mu.Unlock()
	}()
	return c.Call(ctx, method, fields, out)
}

func (c *Client) write(msg any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	body = append(body, '\n')
	// One message per write, never interleaved: goroutines share stdin.
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err = c.stdin.Write(body); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// Notify sends a notification (no id, never answered).
func (c *Client) Notify(method string, params any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.notify(method, params)
}

func (c *Client) notify(method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.write(msg)
}

// Call sends a request and decodes its result into result (may be nil). Safe for concurrent use: the
// daemon runs requests concurrently and answers in any order. When ctx ends first, Call sends
// `$/cancelRequest {id}`; the daemon kills that search's ripgrep process group and answers -32800, which
// Call waits for (up to Options.CancelWait) and returns inside a *CancelledError. If the search finished
// just before the cancellation arrived, its result is decoded and returned as usual.
func (c *Client) Call(ctx context.Context, method string, params any, result any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.call(ctx, method, params, result, true)
}

func (c *Client) call(ctx context.Context, method string, params any, result any, cancellable bool) error {
	id := c.nextID.Add(1)
	ch := make(chan *incoming, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if _, waiting := c.pending[id]; waiting {
			delete(c.pending, id)
			c.abandoned[id] = true
		}
		c.mu.Unlock()
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := c.write(msg); err != nil {
		forget()
		return fmt.Errorf("dsh-search: sending %s: %w", method, err)
	}

	select {
	case resp := <-ch:
		return decode(resp, result)
	case <-c.readDone:
		return c.lastChance(ch, result, forget)
	case <-ctx.Done():
	}

	cancelled := &CancelledError{Cause: ctx.Err()}
	if !cancellable {
		forget()
		return cancelled
	}
	if err := c.notify("$/cancelRequest", map[string]any{"id": id}); err != nil {
		forget()
		return cancelled
	}
	timer := time.NewTimer(c.opts.CancelWait)
	defer timer.Stop()
	select {
	case resp := <-ch:
		if resp.Error == nil { // it finished just before the cancellation arrived
			return decode(resp, result)
		}
		cancelled.Reply = resp.Error
	case <-timer.C:
		forget()
	case <-c.readDone:
		forget()
	}
	return cancelled
}

// lastChance: the reader delivers every answer before it signals the end of stdout, so an answer that
// arrived just before the daemon exited is already in ch.
func (c *Client) lastChance(ch chan *incoming, result any, forget func()) error {
	select {
	case resp := <-ch:
		return decode(resp, result)
	default:
		forget()
		return ErrClosed
	}
}

func decode(resp *incoming, result any) error {
	if resp.Error != nil {
		return resp.Error
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(resp.Result, result)
}

// Shutdown sends `shutdown`: the daemon finishes the searches already running, then answers; later requests
// other than `exit` are refused. Close does this for you.
func (c *Client) Shutdown(ctx context.Context) error {
	if err := c.Call(ctx, "shutdown", nil, nil); err != nil {
		return err
	}
	c.shutDown.Store(true)
	return nil
}

// Close stops the daemon and waits for it, in the order that leaks nothing, and returns its exit status:
//  1. unless done already, `shutdown` (bounded by ShutdownWait: it waits for running searches, unless
//     Options.CancelOnClose cancels them first) and `exit`;
//  2. close its stdin: it answers what is still running and exits 0;
//  3. after ExitWait, SIGTERM: it aborts running searches, kills their ripgrep process groups and exits
//     within graceMs + 1 s;
//  4. after TermWait, SIGKILL as the very last resort (the error then says so).
//
// Close is idempotent.
func (c *Client) Close() (*os.ProcessState, error) {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.State(), c.closeErr
}

func (c *Client) close() error {
	running := true
	select {
	case <-c.readDone:
		running = false
	case <-c.exited:
		running = false
	default:
	}
	if running && !c.closed.Load() {
		if c.opts.CancelOnClose {
			c.cancelRunning()
		}
		if !c.shutDown.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.ShutdownWait)
			_ = c.call(ctx, "shutdown", nil, nil, false)
			cancel()
		}
		_ = c.notify("exit", nil)
	}
	c.closed.Store(true)
	c.stdin.Close()
	var err error
	if !c.waitExit(c.opts.ExitWait) {
		if sigErr := askToStop(c.cmd.Process); sigErr != nil && !errors.Is(sigErr, os.ErrProcessDone) {
			return sigErr
		}
		if c.waitExit(c.opts.TermWait) {
			err = fmt.Errorf("dsh-search did not exit within %v of closing stdin; stopped it with %s", c.opts.ExitWait, stopSignalName)
		} else {
			_ = c.cmd.Process.Kill()
			<-c.exited
			err = fmt.Errorf("dsh-search ignored %s for %v; killed it", stopSignalName, c.opts.TermWait)
		}
	}
	// Normally stdout has ended by now. After a SIGKILL an orphaned daemon may hold it a little longer: don't
	// wait for that, close our end.
	timer := time.NewTimer(2 * time.Second)
	defer timer.Stop()
	select {
	case <-c.readDone:
	case <-timer.C:
		c.stdout.Close()
		<-c.readDone
	}
	return err
}

// cancelRunning sends $/cancelRequest for every call waiting for an answer.
func (c *Client) cancelRunning() {
	c.mu.Lock()
	ids := make([]int64, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		_ = c.notify("$/cancelRequest", map[string]any{"id": id})
	}
}

func (c *Client) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.exited:
		return true
	case <-timer.C:
		return false
	}
}

func (c *Client) waitState(d time.Duration) *os.ProcessState {
	if c.waitExit(d) {
		return c.state
	}
	return nil
}

package main

// A minimal dsh-search client over NDJSON framing, standard library only: spawn the daemon, send
// requests from any goroutine, match responses by id, cancel with `$/cancelRequest` when a context ends,
// and stop the daemon without SIGKILL.

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
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RequestCancelled is the JSON-RPC error code of a request cancelled with `$/cancelRequest` (LSP's).
const RequestCancelled = -32800

// ErrClosed means the daemon's stdout ended (it exited) before the answer came.
var ErrClosed = errors.New("dsh-search: connection closed")

// Error is a JSON-RPC error response. For tool methods Data is set: Data.Text ("Error: …") is what a
// model should be shown, Data.Code the failure kind (INVALID_ARGS, SEARCH_INVALID_PATTERN,
// SEARCH_FAILED, SEARCH_RAW_OUTPUT_OVERFLOW, SEARCH_ABORTED).
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

type ErrorData struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

func (e *Error) Error() string {
	if e.Data != nil {
		return fmt.Sprintf("error %d %s: %s", e.Code, e.Data.Code, e.Data.Text)
	}
	return fmt.Sprintf("error %d: %s", e.Code, e.Message)
}

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

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// Options tune a Client; the zero value is usable.
type Options struct {
	// CancelWait bounds how long a cancelled Call waits for the daemon to confirm (-32800) that the
	// search stopped. Default 5 s.
	CancelWait time.Duration
	// Log receives protocol oddities (responses nobody waits for, unparsable lines); nil = discard.
	Log func(format string, args ...any)
}

type Client struct {
	opts    Options
	cmd     *exec.Cmd
	stdin   *os.File
	writeMu sync.Mutex
	nextID  atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *response

	readDone chan struct{} // closed when the daemon's stdout ends
	exited   chan struct{} // closed when the process has been waited for
	state    *os.ProcessState
}

// Start runs the daemon with NDJSON framing. stderr (its logs, and the one line that explains an exit
// status 2 or 3 at startup) goes to ours.
//
// The pipes are *os.File values made here rather than cmd.StdinPipe/StdoutPipe: then exec copies nothing
// in goroutines and cmd.Wait does not wait for (or close) our pipes, so a goroutine can Wait at once and
// the exit is observed even while a reader still holds stdout.
func Start(opts Options, exe string, args ...string) (*Client, error) {
	if opts.CancelWait <= 0 {
		opts.CancelWait = 5 * time.Second
	}
	cmd := exec.Command(exe, append([]string{"--framing", "ndjson"}, args...)...)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	err = cmd.Start()
	inR.Close() // the child has its own copies now
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	c := &Client{
		opts:     opts,
		cmd:      cmd,
		stdin:    inW,
		pending:  map[int64]chan *response{},
		readDone: make(chan struct{}),
		exited:   make(chan struct{}),
	}
	go c.readLoop(outR)
	go func() {
		_ = cmd.Wait() // the status is in cmd.ProcessState
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	return c, nil
}

// Pid is the process id of the daemon (with PyInstaller onefile: of its launcher).
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Exited is closed once the daemon process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// State is the exit status; valid after Exited is closed.
func (c *Client) State() *os.ProcessState { return c.state }

func (c *Client) logf(format string, args ...any) {
	if c.opts.Log != nil {
		c.opts.Log(format, args...)
	}
}

func (c *Client) readLoop(out *os.File) {
	defer out.Close()
	defer close(c.readDone)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n') // no line-length limit (bufio.Scanner has one)
		if len(bytes.TrimSpace(line)) > 0 {
			c.deliver(line)
		}
		if err != nil {
			if err != io.EOF {
				c.logf("reading daemon stdout: %v", err)
			}
			return
		}
	}
}

func (c *Client) deliver(line []byte) {
	var batch []response
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		if err := json.Unmarshal(line, &batch); err != nil {
			c.logf("unparsable batch from daemon: %v", err)
			return
		}
	} else {
		var one response
		if err := json.Unmarshal(line, &one); err != nil {
			c.logf("unparsable message from daemon: %v", err)
			return
		}
		batch = []response{one}
	}
	for i := range batch {
		resp := &batch[i]
		id, err := strconv.ParseInt(string(resp.ID), 10, 64)
		if err != nil { // id null: the daemon could not read one of our messages
			c.logf("response without a usable id: %v", resp.Error)
			continue
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch == nil {
			c.logf("response for id %d that nobody waits for", id)
			continue
		}
		ch <- resp // buffered: never blocks
	}
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
	_, err = c.stdin.Write(body)
	return err
}

// Notify sends a notification (no id, never answered).
func (c *Client) Notify(method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.write(msg)
}

// Call sends a request and decodes its result into result (may be nil). Safe for concurrent use: the
// daemon runs requests concurrently and answers in any order. When ctx ends first, Call sends
// `$/cancelRequest {id}`; the daemon kills that search's ripgrep process group and answers -32800,
// which Call waits for (up to Options.CancelWait) and returns inside a *CancelledError.
func (c *Client) Call(ctx context.Context, method string, params any, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan *response, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
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
	if err := c.Notify("$/cancelRequest", map[string]any{"id": id}); err != nil {
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

// lastChance: the reader delivers every response before it signals the end of stdout, so an answer that
// arrived just before the daemon exited is already in ch.
func (c *Client) lastChance(ch chan *response, result any, forget func()) error {
	select {
	case resp := <-ch:
		return decode(resp, result)
	default:
		forget()
		return ErrClosed
	}
}

func decode(resp *response, result any) error {
	if resp.Error != nil {
		return resp.Error
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(resp.Result, result)
}

// Stop ends the daemon and waits for it, in the order that leaks nothing:
//  1. close its stdin: it answers what is still running and exits 0 (after `exit` it is gone already);
//  2. after wait, SIGTERM: it aborts running searches, kills their ripgrep process groups and exits
//     within graceMs + 1 s;
//  3. after termWait, SIGKILL as the very last resort.
//
// This is why the daemon is started with exec.Command and not exec.CommandContext: CommandContext's
// default when the context ends is SIGKILL (and Go 1.19 has no cmd.Cancel to change that). The
// executable is a PyInstaller onefile launcher that unpacks Python into a temporary _MEI* directory and
// runs the daemon as its child; SIGKILL cannot be caught, so the launcher neither forwards it nor removes
// that directory: the extraction directory leaks and the Python process (and its ripgrep) is orphaned.
func (c *Client) Stop(wait, termWait time.Duration) (*os.ProcessState, error) {
	c.stdin.Close()
	if c.waitExit(wait) {
		return c.state, nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return nil, err
	}
	if c.waitExit(termWait) {
		return c.state, fmt.Errorf("dsh-search did not exit within %v of closing stdin; stopped it with SIGTERM", wait)
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
	return c.state, fmt.Errorf("dsh-search ignored SIGTERM for %v; killed it", termWait)
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

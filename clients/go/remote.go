package dshsearch

// The daemon on the other side of a channel: a launcher (ssh, docker exec, kubectl exec, podman exec,
// wsl.exe) before its argv, and the installer that puts the matching build in a per-user cache there.
// LaunchCommand is the one place where the argv of a launched daemon is made; Install runs
// remote-install.sh (the same file in all three clients) through the same launcher. See docs/hosts.md,
// "Remote workspaces".

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed" // remote-install.sh
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

//go:embed remote-install.sh
var installScript string

// How the daemon's argv goes through a launcher (Options.LauncherQuote): QuoteShell quotes each argument
// for a POSIX shell and joins them into one argument (what ssh needs: its server runs the command line with
// the remote user's shell); QuoteNone passes them as they are (docker/podman/kubectl exec, wsl.exe --exec);
// QuoteAuto ("" too) is QuoteShell when the launcher's program is ssh, else QuoteNone.
const (
	QuoteAuto  = "auto"
	QuoteShell = "shell"
	QuoteNone  = "none"
)

const installPrefix = "dsh-search-install: "

// QuotesForShell reports whether LaunchCommand quotes the daemon's argv for a shell behind this launcher.
func QuotesForShell(launcher []string, quote string) bool {
	switch quote {
	case QuoteShell:
		return true
	case QuoteNone:
		return false
	}
	if len(launcher) == 0 {
		return false
	}
	program := launcher[0][strings.LastIndexAny(launcher[0], `/\`)+1:] // either separator: C:\…\ssh.exe
	return strings.TrimSuffix(strings.ToLower(program), ".exe") == "ssh"
}

// ShellWord is arg as one word of a POSIX shell (sh, bash, dash, zsh, ksh): single-quoted (a single quote
// inside is closed, escaped with a backslash and reopened).
// Spaces, quotes, $, backquotes, globs, newlines and a leading dash all stay what they are.
func ShellWord(arg string) string {
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// LaunchCommand is the argv to start: program and args as they are, or after the launcher (quoted for the
// remote shell when QuotesForShell says so).
func LaunchCommand(launcher []string, quote, program string, args []string) []string {
	argv := append([]string{program}, args...)
	if len(launcher) == 0 {
		return argv
	}
	out := append([]string{}, launcher...)
	if !QuotesForShell(launcher, quote) {
		return append(out, argv...)
	}
	words := make([]string, len(argv))
	for i, arg := range argv {
		words[i] = ShellWord(arg)
	}
	return append(out, strings.Join(words, " "))
}

func checkLauncher(launcher []string, quote string) error {
	if launcher != nil && (len(launcher) == 0 || launcher[0] == "") {
		return errors.New("dsh-search: Options.Launcher must be an argv prefix whose first element names a program")
	}
	switch quote {
	case "", QuoteAuto, QuoteShell, QuoteNone:
		return nil
	}
	return fmt.Errorf("dsh-search: Options.LauncherQuote must be %q, %q or %q, not %q", QuoteAuto, QuoteShell, QuoteNone, quote)
}

// InstallOptions configure Install.
type InstallOptions struct {
	// Launcher is the argv prefix that reaches the far side, as Options.Launcher.
	Launcher []string
	// LauncherQuote is as Options.LauncherQuote.
	LauncherQuote string
	// Build is a directory holding dsh-search and dsh-search-rg built for the far side's platform (or the
	// path of that dsh-search).
	Build string
	// Env is the launcher's whole environment; nil means this process's.
	Env []string
}

// InstallError means the build could not be put on (or found on) the far side: the installer's own words
// (`the transfer was cut short: …`, `… refusing to use it`, `this build does not run on …`), or how the
// launcher ended (ExitCode, -1 if it was not run or was killed; 255: ssh could not connect; Stderr).
type InstallError struct {
	Message  string
	ExitCode int
	Stderr   string
}

func (e *InstallError) Error() string { return "dsh-search install: " + e.Message }

// Install makes sure the far side of the launcher has this build and returns the path of its dsh-search
// there. remote-install.sh runs through the launcher: when the build is in the far side's per-user cache
// (checked by sha256) it answers at once and nothing is sent; otherwise both files are streamed through the
// channel, checked there by sha256 and by running `dsh-search --version`, and moved in. Nothing is
// downloaded. When ctx ends first the launcher gets SIGTERM (the far side drops what it got) and the
// context's error is returned.
func Install(ctx context.Context, opts InstallOptions) (string, error) {
	if err := checkLauncher(opts.Launcher, opts.LauncherQuote); err != nil {
		return "", err
	}
	if len(opts.Launcher) == 0 {
		return "", errors.New("dsh-search: Install needs a launcher")
	}
	exe := opts.Build
	if info, err := os.Stat(exe); err == nil && info.IsDir() {
		exe = filepath.Join(exe, "dsh-search")
	}
	rg := exe + "-rg"
	sums := make([]string, 2)
	sizes := make([]int64, 2)
	for i, file := range []struct{ what, path string }{{"dsh-search executable", exe}, {"ripgrep sidecar", rg}} {
		sum, size, err := digest(file.path)
		if err != nil {
			return "", &InstallError{Message: fmt.Sprintf("the build to install has no %s at %s (%v)", file.what, file.path, err), ExitCode: -1}
		}
		sums[i], sizes[i] = sum, size
	}
	args := []string{"-c", installScript, "dsh-search-install", sums[0], sums[1],
		strconv.FormatInt(sizes[0], 10), strconv.FormatInt(sizes[1], 10)}
	argv := LaunchCommand(opts.Launcher, opts.LauncherQuote, "sh", args)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = opts.Env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	tail := &tailWriter{}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return "", &InstallError{Message: fmt.Sprintf("cannot start the launcher %s: %v", argv[0], err), ExitCode: -1}
	}
	lines := make(chan string)
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if strings.HasPrefix(line, installPrefix) {
				select {
				case lines <- strings.TrimSuffix(line[len(installPrefix):], "\n"):
				case <-ctx.Done():
				}
			} // other lines are not the installer's: a login shell's chatter, say
			if err != nil {
				return
			}
		}
	}()
	finish := func(kill bool) int {
		stdin.Close()
		if kill {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		for range lines { // the reader must reach EOF before Wait
		}
		<-read
		_ = cmd.Wait()
		return cmd.ProcessState.ExitCode()
	}
	for {
		select {
		case <-ctx.Done():
			finish(true)
			return "", ctx.Err()
		case line, ok := <-lines:
			if !ok {
				code := finish(false)
				message := fmt.Sprintf("the installer ended (status %d) without saying the build is in place", code)
				if code == 255 {
					message += " (255: the launcher could not connect)"
				}
				if t := strings.TrimSpace(tail.String()); t != "" {
					message += ": " + t
				}
				return "", &InstallError{Message: message, ExitCode: code, Stderr: tail.String()}
			}
			word, text, _ := strings.Cut(line, " ")
			switch word {
			case "ready":
				finish(false)
				return text, nil
			case "error":
				code := finish(false)
				return "", &InstallError{Message: text, ExitCode: code, Stderr: tail.String()}
			case "send":
				go func() {
					defer stdin.Close()
					for _, path := range []string{exe, rg} {
						f, err := os.Open(path)
						if err != nil {
							return
						}
						_, err = io.Copy(stdin, f) // an error: the far side gave up, and its error line says why
						f.Close()
						if err != nil {
							return
						}
					}
				}()
			}
		}
	}
}

func digest(path string) (string, int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	if !info.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// tailWriter keeps the last 8 KiB written to it (a launcher's stderr).
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 8192 {
		w.buf = w.buf[len(w.buf)-8192:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

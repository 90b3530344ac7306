//go:build !windows

// The launcher tests use POSIX shell stand-ins (ssh, env, sh) and POSIX lookups: not on Windows, where the
// client's Windows tests (tests/windows, under wine) run the rest of the package's tests.

package dshsearch

// Launchers and the executable's lookup, without a daemon: tests/remote drives the client through a real
// sshd (quoting, install, a killed host).

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFindExecutableNeverLooksInTheCurrentDirectory(t *testing.T) {
	here := t.TempDir()
	planted := filepath.Join(here, "dsh-search")
	must(t, os.WriteFile(planted, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	cwd, err := os.Getwd()
	must(t, err)
	must(t, os.Chdir(here))
	defer func() { must(t, os.Chdir(cwd)) }()
	t.Setenv("DSH_SEARCH_EXE", "")
	for _, path := range []string{"/nonexistent", ".", "", "/nonexistent" + string(os.PathListSeparator) + "."} {
		t.Setenv("PATH", path)
		for _, explicit := range []string{"", "dsh-search"} {
			if found, err := FindExecutable(explicit); err == nil {
				t.Fatalf("PATH=%q, FindExecutable(%q) found %q in the current directory", path, explicit, found)
			}
		}
	}
	if found, err := FindExecutable("./dsh-search"); err != nil || found != planted {
		t.Fatalf("a path with a directory is taken as given: %q %v", found, err)
	}
	t.Setenv("PATH", "/nonexistent"+string(os.PathListSeparator)+here)
	if found, err := FindExecutable(""); err != nil || found != planted {
		t.Fatalf("PATH lookup: %q %v", found, err)
	}
}

func TestLaunchCommand(t *testing.T) {
	args := []string{"--workdir=/a b", "it's", "$HOME", "two\nlines", "-x", ""}
	if got := LaunchCommand(nil, "", "dsh-search", args); !reflect.DeepEqual(got, append([]string{"dsh-search"}, args...)) {
		t.Fatalf("no launcher: %q", got)
	}
	docker := []string{"docker", "exec", "-i", "ctr"}
	if got := LaunchCommand(docker, "", "dsh-search", args); !reflect.DeepEqual(got, append(append([]string{}, docker...), append([]string{"dsh-search"}, args...)...)) {
		t.Fatalf("docker: %q", got)
	}
	quoted := `'dsh-search' '--workdir=/a b' 'it'\''s' '$HOME' 'two` + "\n" + `lines' '-x' ''`
	for _, ssh := range [][]string{{"ssh", "-T", "host"}, {"/usr/bin/ssh", "host"}, {`C:\ssh\SSH.EXE`, "host"}} {
		if got := LaunchCommand(ssh, QuoteAuto, "dsh-search", args); !reflect.DeepEqual(got, append(append([]string{}, ssh...), quoted)) {
			t.Fatalf("%q: %q", ssh, got)
		}
	}
	if got := LaunchCommand(docker, QuoteShell, "dsh-search", args); !reflect.DeepEqual(got, append(append([]string{}, docker...), quoted)) {
		t.Fatalf("QuoteShell: %q", got)
	}
	if got := LaunchCommand([]string{"ssh", "h"}, QuoteNone, "x", []string{"a b"}); !reflect.DeepEqual(got, []string{"ssh", "h", "x", "a b"}) {
		t.Fatalf("QuoteNone: %q", got)
	}
}

func TestQuotedArgumentsReachTheProgramThroughAShell(t *testing.T) {
	// A stand-in for ssh: like sshd, it joins the command's words with spaces and hands them to sh -c.
	bin := t.TempDir()
	must(t, os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\nshift\nexec sh -c \"$*\"\n"), 0o755))
	args := []string{"a b", "it's", `"dq"`, "$HOME `id` $(id)", "two\nlines", "-x", "--y=-z", "", `back\slash`, "*", "é"}
	argv := LaunchCommand([]string{filepath.Join(bin, "ssh"), "host"}, QuoteAuto, "printf", append([]string{`%s\0`}, args...))
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	must(t, err)
	if got := strings.Split(string(out), "\x00"); !reflect.DeepEqual(got[:len(got)-1], args) {
		t.Fatalf("arrived as %q", got)
	}
}

func TestLauncherOptionsAreChecked(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{SampleOverCapGlobResults: Bool(true), Launcher: []string{}}, "Launcher must be"},
		{Options{SampleOverCapGlobResults: Bool(true), Launcher: []string{""}}, "Launcher must be"},
		{Options{SampleOverCapGlobResults: Bool(true), Launcher: []string{"ssh"}, LauncherQuote: "bash"}, "LauncherQuote must be"},
		{Options{SampleOverCapGlobResults: Bool(true), Install: "/build"}, "needs a Launcher"},
		{Options{SampleOverCapGlobResults: Bool(true), Launcher: []string{"ssh"}, Install: "/b", Executable: "/x"}, "not both"},
	} {
		if _, err := Start(ctx, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: expected %q, got %v", c.opts, c.want, err)
		}
	}
	var installErr *InstallError
	if _, err := Install(ctx, InstallOptions{Launcher: []string{"ssh"}, Build: t.TempDir()}); !errors.As(err, &installErr) ||
		!strings.Contains(err.Error(), "has no dsh-search executable") {
		t.Fatalf("a build without files: %v", err)
	}
}

func TestInstallFillsAnEmptyCacheReusesAFullOneAndReportsACutTransfer(t *testing.T) {
	// The installer runs through a local launcher (env sets the cache); a fake build stands in for the daemon.
	root := t.TempDir()
	build := filepath.Join(root, "build")
	must(t, os.Mkdir(build, 0o755))
	must(t, os.WriteFile(filepath.Join(build, "dsh-search"), []byte("#!/bin/sh\necho \"dsh-search 0.0 (fake)\"\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(build, "dsh-search-rg"), make([]byte, 300_000), 0o755))
	cache := filepath.Join(root, "cache")
	launcher := []string{"env", "XDG_CACHE_HOME=" + cache}
	ctx := context.Background()
	path, err := Install(ctx, InstallOptions{Launcher: launcher, Build: build})
	must(t, err)
	if dir := filepath.Dir(path); filepath.Dir(dir) != filepath.Join(cache, "dsh-search", "builds") || len(filepath.Base(dir)) != 64 {
		t.Fatalf("installed at %q", path)
	}
	if again, err := Install(ctx, InstallOptions{Launcher: launcher, Build: build}); err != nil || again != path {
		t.Fatalf("the full cache: %q %v", again, err)
	}
	cut := filepath.Join(root, "cut")
	must(t, os.WriteFile(cut, []byte("#!/bin/sh\nhead -c 1000 | \"$@\"\n"), 0o755))
	must(t, os.RemoveAll(filepath.Join(cache, "dsh-search", "builds")))
	var installErr *InstallError
	_, err = Install(ctx, InstallOptions{Launcher: append([]string{cut}, launcher...), Build: build})
	if !errors.As(err, &installErr) || !strings.HasPrefix(installErr.Message, "the transfer was cut short: 1000 of ") {
		t.Fatalf("a cut transfer: %v", err)
	}
	_, err = Install(ctx, InstallOptions{Launcher: []string{"sh", "-c", "exit 255"}, Build: build})
	if !errors.As(err, &installErr) || installErr.ExitCode != 255 {
		t.Fatalf("a launcher that fails: %v", err)
	}
}

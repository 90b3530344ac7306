// A host on the Go client that drives a daemon on the far side of a launcher (tests/remote): the same steps
// and lines as python_host.py.
//
//	remote-host '{"mode": "session"|"hang", "launcher": [...], "workdir": "/tmp/ws", "slow": "/tmp/slow",
//	              "install": "/path/to/dist" (optional)}'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	dshsearch "github.com/dsh-search/dsh-search/clients/go"
)

const slowPattern = `(?:\w+\W){1,20}?\w{9}\b`

type config struct {
	Mode     string   `json:"mode"`
	Launcher []string `json:"launcher"`
	Workdir  string   `json:"workdir"`
	Slow     string   `json:"slow"`
	Install  string   `json:"install"`
}

func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func check(err error) {
	if err != nil {
		fmt.Printf("FAILED: %v\n", err)
		os.Exit(1)
	}
}

func start(ctx context.Context, c config, executable, install string) *dshsearch.Client {
	client, err := dshsearch.Start(ctx, dshsearch.Options{
		Executable:               executable,
		Install:                  install,
		Launcher:                 c.Launcher,
		SampleOverCapGlobResults: dshsearch.Bool(true),
		Workdir:                  c.Workdir,
		Args:                     []string{"--index", "off", "--timeout-ms", "120000"},
		Stderr:                   io.Discard,
	})
	check(err)
	return client
}

func session(ctx context.Context, c config) {
	executable := ""
	if c.Install != "" {
		path, err := dshsearch.Install(ctx, dshsearch.InstallOptions{Launcher: c.Launcher, Build: c.Install})
		check(err)
		executable = path
		say("install: %s", path)
	}
	client := start(ctx, c, executable, "")
	info := client.InitializeResult()
	remote, _ := json.Marshal(info.Config["remote"])
	say("initialize: %s remote=%s ripgrep=%s", info.ServerInfo.Name, remote, info.Ripgrep.Path)

	found, err := client.Grep(ctx, dshsearch.GrepParams{Pattern: "TODO"})
	check(err)
	files := []string{}
	for _, f := range found.Meta.Files {
		files = append(files, f.Path)
	}
	say("grep: %s in %s", strings.Split(found.Text, "\n")[0], strings.Join(files, ", "))
	listed, err := client.Glob(ctx, dshsearch.GlobParams{Pattern: "**/*.js"})
	check(err)
	say("glob: %s", strings.Join(listed.Meta.Paths, ", "))
	capped, err := client.Glob(ctx, dshsearch.GlobParams{Pattern: "many/*.txt"})
	check(err)
	say("capped: %d of %d, saved at %s", len(capped.Meta.Paths), capped.Meta.Total, capped.Spill.Locator)
	text := strings.Split(capped.Text, "\n")
	say("footer: %s", text[len(text)-1])
	lines := []string{}
	pager := client.SpillPager(capped.Spill.Locator, 40)
	for {
		page, err := pager.Next(ctx)
		if err == io.EOF {
			break
		}
		check(err)
		lines = append(lines, strings.Split(page.Text, "\n")...)
	}
	say("spill pages: %d lines, %s .. %s", len(lines), lines[0], lines[len(lines)-1])
	read, err := client.CallTool(ctx, "read", map[string]any{"path": capped.Spill.Locator, "offset": 150, "limit": 1}, "", "")
	check(err)
	say("read: %s", strings.Split(read.Content[0].Text, "\n")[0])

	var mu sync.Mutex
	reports := []dshsearch.Progress{}
	slow, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err = client.Grep(slow, dshsearch.GrepParams{Pattern: slowPattern, Cwd: c.Slow, OnProgress: func(p dshsearch.Progress) {
		mu.Lock()
		reports = append(reports, p)
		mu.Unlock()
	}})
	cancel()
	if reply := dshsearch.CancelReply(err); reply != nil {
		say("cancel: %d %s %s", reply.Code, reply.Kind(), reply.Text())
	} else {
		check(err)
		say("cancel: the slow grep finished")
	}
	mu.Lock()
	first := ""
	if len(reports) > 0 {
		first = reports[0].Message
	}
	say("progress: %d reports, %s", len(reports), first)
	mu.Unlock()

	var rpcErr *dshsearch.Error
	_, err = client.Grep(ctx, dshsearch.GrepParams{Pattern: "("})
	if !errors.As(err, &rpcErr) {
		check(fmt.Errorf("expected an error answer, got %v", err))
	}
	say("error: %d %s %s", rpcErr.Code, rpcErr.Kind(), strings.Split(rpcErr.Text(), "\n")[0])
	_, err = client.Grep(ctx, dshsearch.GrepParams{Pattern: "x", Cwd: "/nonexistent/on-the-far-side"})
	if !errors.As(err, &rpcErr) {
		check(fmt.Errorf("expected an error answer, got %v", err))
	}
	say("missing cwd: %s %s", rpcErr.Kind(), rpcErr.Text())
	state, err := client.Close()
	check(err)
	say("close: status %d", state.ExitCode())
}

func hang(ctx context.Context, c config) {
	client := start(ctx, c, "", c.Install)
	say("slow grep: started")
	_, err := client.Grep(ctx, dshsearch.GrepParams{Pattern: slowPattern, Cwd: c.Slow})
	check(err)
	say("slow grep: ended")
	_, _ = client.Close()
}

func main() {
	var c config
	check(json.Unmarshal([]byte(os.Args[1]), &c))
	ctx := context.Background()
	if c.Mode == "session" {
		session(ctx, c)
	} else {
		hang(ctx, c)
	}
	say("done")
}

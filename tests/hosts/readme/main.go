// A host written from clients/go/README.md alone, run by tests/hosts/test_readme_hosts.py from a copy
// outside the repository, with the client required and replaced as the README says:
//
//	readme-host TREE CORPUS SLOW_PATTERN
//
// It greps TREE (capped, so it pages through the spill), then runs a slow grep in CORPUS and cancels its
// context at the first progress report; it prints the daemon's answer to the cancellation, stops the daemon
// and exits.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	dshsearch "github.com/dsh-search/dsh-search/clients/go"
)

func main() {
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Println("FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("done")
}

func run(tree, corpus, slowPattern string) error {
	ctx := context.Background()
	client, err := dshsearch.Start(ctx, dshsearch.Options{SampleOverCapGlobResults: dshsearch.Bool(true), Workdir: tree})
	if err != nil {
		return err
	}
	defer client.Close()

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found, err := client.Grep(cctx, dshsearch.GrepParams{Pattern: "^hit", Include: "*.txt"})
	if err != nil {
		return err
	}
	fmt.Println("grep:", strings.SplitN(found.Text, "\n", 2)[0])
	if found.Spill == nil {
		return fmt.Errorf("the grep was not capped")
	}
	pager := client.SpillPager(found.Spill.Locator, 100)
	pages, lines, total := 0, 0, 0
	for {
		page, err := pager.Next(cctx)
		if err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		pages, lines, total = pages+1, lines+len(strings.Split(page.Text, "\n")), page.TotalLines
	}
	fmt.Printf("spill: %d pages, %d of %d lines\n", pages, lines, total)

	slowCtx, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	_, err = client.Grep(slowCtx, dshsearch.GrepParams{Pattern: slowPattern, Cwd: corpus, OnProgress: func(p dshsearch.Progress) {
		fmt.Println("progress:", p.Message)
		stop() // enough
	}})
	reply := dshsearch.CancelReply(err)
	if reply == nil {
		return fmt.Errorf("the slow grep was not cancelled: %v", err)
	}
	fmt.Printf("cancelled: %d %s %s\n", reply.Code, reply.Kind(), reply.Text())

	state, err := client.Close()
	if err != nil {
		return err
	}
	fmt.Println("closed:", state.ExitCode())
	return nil
}

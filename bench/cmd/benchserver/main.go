// Command benchserver is the stdio MCP server of the client comparison:
// by default the realistic one (package server's Serve); with -fast the
// one that is never the bottleneck (ServeFast: canned answers, the id
// spliced in, one write per read).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/snodo/snodo/bench/server"
)

func main() {
	fast := flag.Bool("fast", false, "answer from canned lines (calls only): a server that is never the bottleneck")
	flag.Parse()
	enlargePipe(os.Stdout)
	serve := server.Serve
	if *fast {
		serve = server.ServeFast
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

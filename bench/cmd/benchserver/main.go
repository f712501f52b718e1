// Command benchserver is the near-zero-cost stdio MCP server of the client
// comparison (see package server).
package main

import (
	"fmt"
	"os"

	"github.com/snodo/snodo/bench/server"
)

func main() {
	enlargePipe(os.Stdout)
	if err := server.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

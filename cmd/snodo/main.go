// Command snodo talks to an MCP server from the command line: it starts the
// server as a child process, settles the protocol era, runs one command
// (info, tools, call, request or listen) and closes the connection.
// `snodo demo` tours the features against an example server built into the
// binary. Run `snodo -h` for usage.
package main

import "os"

// Hidden first arguments that make the binary play another role.
const (
	demoServerArg = "__demo-server" // run internal/demoserver on stdio
	teeArg        = "__tee"         // relay stdio to a server, copying the wire to stderr (--verbose)
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case demoServerArg:
			os.Exit(runDemoServer(os.Args[2:]))
		case teeArg:
			os.Exit(runTee(os.Args[2:]))
		}
	}
	os.Exit(run(os.Args[1:], systemIO()))
}

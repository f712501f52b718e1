// Command snodo talks to an MCP server from the command line: it starts the
// server as a child process, settles the protocol era, runs one command
// (info, tools, call, request or listen) and closes the connection. The
// server may be named in an mcpServers file (--config FILE --server NAME;
// `snodo servers` lists them all) or served over NATS (`snodo node`
// serves a file's servers; --nats URL --server NAME calls one).
// `snodo demo` tours the features against an example server built into the
// binary. Run `snodo -h` for usage.
package main

import "os"

// demoServerArg is the hidden first argument that makes the binary run
// internal/demoserver on stdio.
const demoServerArg = "__demo-server"

func main() {
	if len(os.Args) > 1 && os.Args[1] == demoServerArg {
		os.Exit(runDemoServer(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], systemIO()))
}

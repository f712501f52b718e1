// Command testserver is the scriptable MCP stdio server used by snodo's
// tests. See package github.com/snodo/snodo/test/testserver for the
// methods and flags it understands.
package main

import (
	"os"

	"github.com/snodo/snodo/test/testserver"
)

func main() {
	os.Exit(testserver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

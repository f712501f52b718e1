package servers_test

import (
	"fmt"
	"log"

	"github.com/snodo/snodo/servers"
)

// Parse a host's server file and start one of its servers as a pool.
func Example() {
	f, err := servers.Parse("mcp.json", []byte(`{
		"mcpServers": {
			"echo": {"command": "cat", "snodo": {"pool": 2, "timeout": "10s"}},
			"web": {"url": "https://example.com/mcp"},
			"old": {"command": "old-server", "disabled": true}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range f.Servers {
		fmt.Println(s.Name, s.Target, "pool", s.Pool)
	}
	fmt.Println("skipped old:", f.Skipped["old"])

	// A server of the file starts through its Target, with its Options
	// (its env, cwd, timeout and supervision, and the program's own
	// appended after them), supervised or as a pool of s.Pool servers:
	//
	//	p, err := supervisor.NewPool(ctx, s.Target, s.Pool, s.Options...)

	// Output:
	// echo cat pool 2
	// web https://example.com/mcp pool 1
	// skipped old: disabled
}

// A broken file is an error naming the file, the server and the field.
func ExampleParse_broken() {
	_, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"git": {"command": "uvx", "args": "mcp-server-git"}}}`))
	fmt.Println(err)
	// Output:
	// mcp.json: server "git": "args": want an array of strings, got a string
}

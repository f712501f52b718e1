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
			"web": {"url": "https://example.com/mcp"}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range f.Servers {
		fmt.Println(s.Name, s.Command, "pool", s.Pool, "timeout", s.Timeout)
	}
	fmt.Println("skipped web:", f.Skipped["web"])

	// A server from the file connects with its env, cwd and timeout, as
	// one plain connection (s.Connect) or a supervised pool of s.Pool
	// servers (s.NewPool).
	// Output:
	// echo cat pool 2 timeout 10s
	// skipped web: a url server (snodo starts stdio servers only)
}

// A broken file is an error naming the file, the server and the field.
func ExampleParse_broken() {
	_, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"git": {"command": "uvx", "args": "mcp-server-git"}}}`))
	fmt.Println(err)
	// Output:
	// mcp.json: server "git": "args": want an array of strings, got a string
}

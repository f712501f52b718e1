package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// serverSpec is one named server of an mcpServers file.
type serverSpec struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
}

// loadServers reads an mcpServers file ({"mcpServers": {NAME: {command,
// args, env, cwd}}}; "servers" is accepted as the top key too) and
// returns the specs by name, and the names sorted.
func loadServers(path string) (map[string]serverSpec, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--config: %w", err)
	}
	var doc struct {
		MCPServers map[string]serverSpec `json:"mcpServers"`
		Servers    map[string]serverSpec `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("--config %s: %w", path, err)
	}
	servers := doc.MCPServers
	if servers == nil {
		servers = doc.Servers
	}
	if len(servers) == 0 {
		return nil, nil, fmt.Errorf("--config %s: no servers (write {\"mcpServers\": {\"NAME\": {\"command\": …}}})", path)
	}
	names := make([]string, 0, len(servers))
	for name, s := range servers {
		if s.Command == "" {
			return nil, nil, fmt.Errorf("--config %s: server %q: no command", path, name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return servers, names, nil
}

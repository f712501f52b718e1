package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PeerPath is a file test/peers/install.sh installed, rel to test/peers
// (bin/everything-server, node_modules/…), or fails tb saying how to
// install it.
func PeerPath(tb testing.TB, rel string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(root, "test", "peers", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("peer %s is not installed (%v): run bash test/peers/install.sh", rel, err)
	}
	return p
}

// NodePath is node on PATH, or fails tb saying what to install.
func NodePath(tb testing.TB) string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node is not on PATH: install Node.js >= 20, then run bash test/peers/install.sh")
	}
	return node
}

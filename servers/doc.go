// Package servers reads the JSON file MCP hosts (Claude Desktop, Cursor,
// VS Code…) use to name their servers, and starts them as snodo
// connections or supervised pools.
//
// The file holds one object of named servers under "mcpServers" (or
// "servers", as VS Code spells it):
//
//	{
//	  "mcpServers": {
//	    "files": {
//	      "command": "npx",
//	      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
//	      "env": {"LOG_LEVEL": "info"},
//	      "cwd": "/srv",
//	      "snodo": {"pool": 3, "timeout": "30s", "maxRestarts": 5, "window": "30s"}
//	    }
//	  }
//	}
//
// Each server has a command, and optionally args, env (added to the
// inherited environment) and cwd; or, reached over Streamable HTTP, a
// "url" (with "type": "http" or "streamable-http"), and optionally
// "headers" and an "oauth" object. Values are taken as written: snodo does
// not expand ${VAR} or ${input:…} placeholders. The optional "snodo"
// object, which other hosts ignore, sets the pool size and supervision:
//
//	pool           how many servers a pool runs (default 1, at most 256)
//	timeout        per-request timeout, e.g. "30s" ("-1s": none)
//	shutdownGrace  signal a server still running this long after Close (default 2s; not for a url)
//	era            "modern" or "legacy": skip era detection
//	maxRestarts    with window: give up after more restarts than this within window
//	window         the restart intensity window (default 30s)
//	failFast       true: calls made during a restart fail at once
//	maxWait        how long calls wait for a restart (default 60s)
//
// Servers marked "disabled": true and servers of another transport (a
// "type" other than "stdio", "http" and "streamable-http") are skipped
// with a warning. Keys
// snodo does not know are warnings, never silently ignored: the package
// logs nothing, it returns them in File.Warnings for you to show, and
// a malformed file is an error that names the file, the server and the
// field.
//
// Parsing builds each Server once: its Target (its command and args, or
// its url), its Pool size, and everything else the file gives it as
// supervisor Options, to which a program appends its own. It starts
// through its Target with them, supervised (supervisor.Connect) or as a
// pool of Pool servers:
//
//	p, err := supervisor.NewPool(ctx, s.Target, s.Pool, s.Options...)
//
// A Router starts a
// pool for every server of a file, all at once, and routes call messages
// to them by name: an actor sends it &To{Server: "files", Call:
// &snodo.Call{…}} with ctx.Request and gets the *snodo.Reply from that
// server's pool.
package servers

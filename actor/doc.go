// Package actor holds the MCP-agnostic actor helpers snodo builds on
// protoactor-go: a quiet shared actor system, Life — the one way an actor that owns something (a child
// process, a supervised server, a pool) records why it stops, links to
// its owner (a context or an actor), takes exit signals (snodo.Exit
// sends one, with a reason) and stops on a
// panic — an owner link for code that is not an actor (WatchOwner), and a
// supervisor strategy that stops (never restarts) an actor whose state
// cannot be rebuilt.
//
// Import it under another name when you also import protoactor-go's own
// actor package:
//
//	import (
//		"github.com/asynkron/protoactor-go/actor"
//		snodoactor "github.com/snodo/snodo/actor"
//	)
package actor

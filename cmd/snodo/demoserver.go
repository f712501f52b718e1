package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/snodo/snodo/internal/demoserver"
)

// runDemoServer runs the example server on stdio (`snodo __demo-server`).
// `snodo demo` starts it, and so can anyone:
//
//	snodo tools -- snodo __demo-server
func runDemoServer(args []string) int {
	var opts demoserver.Options
	fs := flag.NewFlagSet(demoServerArg, flag.ContinueOnError)
	fs.DurationVar(&opts.Tick, "tick", 0, "time between countdown steps (default 250ms)")
	fs.DurationVar(&opts.PluginDelay, "plugin-delay", 0, "time the time plugin takes to load once tools are watched (default 500ms)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := demoserver.Serve(os.Stdin, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitFailure
	}
	return exitOK
}

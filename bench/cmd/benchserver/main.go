// Command benchserver is the MCP server of the client comparison: by
// default the realistic stdio one (package server's Serve); with -fast
// the stdio one that is never the bottleneck (ServeFast: canned answers,
// the id spliced in, one write per read), and with -fast -no-meta the same
// with no _meta in its results (ServeFastWithoutMeta); with -http ADDR the Streamable
// HTTP one that is never the bottleneck (HTTPFast), which prints its
// endpoint URL on stdout and serves until its stdin ends; with -http ADDR
// -forward the floor of an HTTP front for a stdio server (Forward, in
// front of benchserver -fast as a child).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/snodo/snodo/bench/server"
)

func main() {
	fast := flag.Bool("fast", false, "answer from canned lines (calls only): a server that is never the bottleneck")
	noMeta := flag.Bool("no-meta", false, "with -fast: put no _meta in results (modern results then carry no serverInfo), to measure what _meta costs a client")
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address (127.0.0.1:0 for any port) instead of stdio; the endpoint URL is printed on stdout, and the server exits when stdin ends")
	forward := flag.Bool("forward", false, "with -http: serve a bare forwarder (net/http and a pipe each way) in front of benchserver -fast, the floor of an HTTP front for a stdio server")
	flag.Parse()
	if *httpAddr != "" {
		l, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchserver:", err)
			os.Exit(1)
		}
		if *forward {
			f, err := server.StartForward([]string{os.Args[0], "-fast"})
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchserver:", err)
				os.Exit(1)
			}
			defer f.Close()
			srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(l) }()
		} else {
			go func() { _ = server.NewHTTPFast().Serve(l) }()
		}
		fmt.Printf("http://%s/mcp\n", l.Addr())
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	enlargePipe(os.Stdout)
	serve := server.Serve
	switch {
	case *noMeta && !*fast:
		fmt.Fprintln(os.Stderr, "benchserver: -no-meta needs -fast")
		os.Exit(2)
	case *noMeta:
		serve = server.ServeFastWithoutMeta
	case *fast:
		serve = server.ServeFast
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

GO ?= go

.PHONY: test api-count conformance peers vet fmt-check demo build bench bench-compare bench-http bench-remote bench-gateway bench-notes soak fuzz fuzz-short fmt

# The test command the README gives and CI runs: formatting and vet gates
# (both modules), the race-enabled suite (real child processes, goleak,
# reap checks), a few seconds of each fuzz target, then the official MCP
# conformance suite against snodo's client.
test: fmt-check vet api-count peers
	$(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory fuzz-short
	$(MAKE) --no-print-directory conformance

# The official MCP conformance suite (client mode, --suite all; pinned in
# test/conformance with the node 22 it needs) against test/cmd/conformance
# over Streamable HTTP; prints the pass count and fails on any failure
# test/conformance/expected-failures.yml does not list. Then the suite in
# server mode against go-sdk's everything-server (test/peers), directly and
# through snodo serve (stdio, --config with a pool of 3, --nats in front of
# a snodo node), with the pass count per route; every scenario that passes
# directly must pass through each route (test/conformance/server.sh).
conformance:
	bash test/conformance/run.sh
	bash test/conformance/server.sh

# The real reference MCP servers the integration tests run (Go module proxy, npm registry).
peers:
	bash test/peers/install.sh

# go vet over the library and over the bench/ module, which builds against
# this tree (a replace directive) so an API change cannot leave it broken;
# then the library and the command built for Windows and macOS, which the
# tests (Linux) do not reach.
vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	GOOS=windows $(GO) build ./...
	GOOS=darwin $(GO) build ./...

# Fails, listing the files, when any tracked Go file is not gofmt-formatted.
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt -l: these files need make fmt:"; echo "$$out"; exit 1; fi

# Runs the bundled example server end to end.
demo:
	$(GO) run ./cmd/snodo demo

build:
	$(GO) build -o bin/snodo ./cmd/snodo

# Micro-benchmarks next to the code (transport vs a minimal client, handlers, subscriptions).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The comparison with the official Go SDK and mcp-go (its own module under bench/).
bench-compare:
	cd bench && $(GO) run ./cmd/compare -out ../docs/performance.md

# Only the Streamable HTTP section of docs/performance.md (snodo.ConnectHTTP against go-sdk's and
# mcp-go's HTTP clients and the minimal net/http ceiling), measured again and spliced in place.
bench-http:
	cd bench && $(GO) run ./cmd/compare -runs 5 -only http,http-subs -out ../docs/performance.md

# Only the remote calls section of docs/performance.md (remote.Client against bare nats.go request/reply
# and a local pool call, with issue 30's goals), measured again and spliced in place.
bench-remote:
	cd bench && $(GO) run ./cmd/compare -only remote -out ../docs/performance.md

# Only the gateway section of docs/performance.md (go-sdk's client on the fast HTTP server directly
# and through snodo serve, issue 39's added-p50 goal), measured again and spliced in place.
bench-gateway:
	cd bench && $(GO) run ./cmd/compare -only gateway -out ../docs/performance.md

# Copies bench/notes/*.md into the end of docs/performance.md without measuring again.
bench-notes:
	cd bench && $(GO) run ./cmd/compare -notes-only -out ../docs/performance.md

# 1,000,000 calls and 10,000 connect/close cycles; not part of make test.
soak:
	$(GO) test -tags soak -run Soak -count=1 -timeout 90m -v ./test/soak/

# Fuzz targets as package:Target.
FUZZ_TARGETS = ./internal/jsonrpc:FuzzScan ./internal/jsonrpc:FuzzValue ./internal/framer:FuzzFramer ./internal/engine:FuzzRoute .:FuzzDecodeCallTool
# A count, not a duration: with a duration, Go's fuzzing coordinator can
# report its own deadline as a failure ("context deadline exceeded") when
# the deadline fires while its workers are busy, as on a loaded 2-core CI
# machine; a count sets no deadline.
FUZZTIME ?= 20000x
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

# Each fuzz target for FUZZTIME (longer runs: make fuzz FUZZTIME=10m).
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

fmt:
	gofmt -w $$(git ls-files '*.go')

# The exported names of the root package and of all public packages
# together (internal/cmd/apicount says what counts); fails past the
# limits, which only go down (Streamable HTTP raised them once: ConnectHTTP,
# WithHTTPClient, WithHTTPHeader in the root; connection's HTTP errors;
# servers.Server.Target; the fourth round's fixed names raised them again:
# WithSandbox, Sandbox, SandboxError in the root, and the gateway
# package's 23 names: Handler and its methods, New and its options,
# NewServer, ListCache, RequireBearer); the typed internals added two
# names (limit 397 to 399): connection.Conn.System and supervisor.Pool.Size replaced
# two untyped hooks (the system a Conn's PID lives in; a pool's size
# read without copying its members). Issue 37 point 6 moved the engine
# and the subscription machinery internal and every sentinel to the root,
# one name each: the root went from 178 to 197 (19 sentinels from
# connection, actor and subscription) and all packages from 399 to 378.
API_MAX_ROOT ?= 197
API_MAX_ALL ?= 378
api-count:
	$(GO) run ./internal/cmd/apicount -max-root $(API_MAX_ROOT) -max-all $(API_MAX_ALL)

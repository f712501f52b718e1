#!/usr/bin/env bash
# Installs the MCP servers snodo's integration tests (peers_test.go) run
# against. Everything comes from the registries through their own clients:
# the Go module proxy (go install) and the npm registry (npm ci). Nothing is
# vendored and nothing is fetched at test time.
#
# Where the tests look for them (paths relative to the repository root):
#   test/peers/bin/everything-server
#       the official Go SDK's conformance server, go-sdk v1.8.0 (modern and legacy)
#   test/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#       the TypeScript reference server, run as `node <that file> stdio` (legacy)
#   test/peers/ts-modern/server.mjs
#       our server on the TypeScript SDK v2 (@modelcontextprotocol/server), run with
#       node: modern-only on stdio, both eras with --http; its packages resolve from
#       test/peers/node_modules
#   test/peers/bin/mcpgo-server
#       our server on mcp-go's Streamable HTTP server (test/peers/mcpgo-server, a module of
#       its own so the library never depends on mcp-go), both eras; with -sse its
#       HTTP+SSE server of 2024-11-05 instead
#   test/peers/bin/gosdk-sse-server
#       our server on the Go SDK's HTTP+SSE transport of 2024-11-05 (mcp.NewSSEHandler;
#       test/peers/gosdk-sse-server, a module of its own), legacy only
#   test/peers/bin/gosdk-client
#       our client on the Go SDK (test/peers/gosdk-client, a module of its own), over
#       Streamable HTTP or stdio: the gateway's and the bridge's interop tests
# plus `node` (>= 20) on PATH.
#
# Usage: bash test/peers/install.sh     (idempotent; safe to re-run)
set -euo pipefail
cd "$(dirname "$0")"

GO_SDK_VERSION=v1.8.0

command -v go >/dev/null || { echo "install.sh: go is not on PATH" >&2; exit 1; }
command -v node >/dev/null || { echo "install.sh: node (>= 20) is not on PATH" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm is not on PATH" >&2; exit 1; }

echo "install.sh: go install everything-server@${GO_SDK_VERSION} into test/peers/bin"
GOBIN="$PWD/bin" go install \
	"github.com/modelcontextprotocol/go-sdk/conformance/everything-server@${GO_SDK_VERSION}"

echo "install.sh: go install ./mcpgo-server (mcp-go's Streamable HTTP server) into test/peers/bin"
(cd mcpgo-server && GOBIN="$PWD/../bin" go install .)

echo "install.sh: go install ./gosdk-sse-server (the Go SDK's HTTP+SSE server) into test/peers/bin"
(cd gosdk-sse-server && GOBIN="$PWD/../bin" go install .)

echo "install.sh: go install ./gosdk-client (the Go SDK's client) into test/peers/bin"
(cd gosdk-client && GOBIN="$PWD/../bin" go install .)

echo "install.sh: npm ci in test/peers (locked by package-lock.json)"
npm ci --no-audit --no-fund --loglevel=error

test -x bin/everything-server
test -x bin/mcpgo-server
test -x bin/gosdk-sse-server
test -x bin/gosdk-client
test -f node_modules/@modelcontextprotocol/server-everything/dist/index.js
test -f node_modules/@modelcontextprotocol/server/package.json
echo "install.sh: peers installed"

package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
)

// Keys of the modern era's per-request _meta.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// legacyVersions are the protocol versions served to clients that
// initialize, newest first.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

func isLegacyVersion(v string) bool {
	for _, l := range legacyVersions {
		if v == l {
			return true
		}
	}
	return false
}

// post serves one POSTed message.
func (h *Handler) post(w http.ResponseWriter, r *http.Request, s snodo.Session) {
	body, err := readBody(w, r, h.cfg.maxBody)
	if errors.Is(err, errBodyTooLarge) {
		writeJSONError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest, "gateway: request body over the limit; send less", nil)
		return
	}
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "gateway: request body could not be read", nil)
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "gateway: JSON-RPC batches are not supported; send one message per POST", nil)
		return
	}
	env, err := jsonrpc.Scan(body)
	if err != nil {
		if !json.Valid(body) {
			writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "Parse error: the body is not valid JSON", nil)
			return
		}
		writeJSONError(w, http.StatusBadRequest, env.ID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error(), nil)
		return
	}
	if sid := r.Header.Get(hdrSessionID); sid != "" {
		h.legacyPost(w, r, env, sid)
		return
	}
	if env.Kind == jsonrpc.KindRequest && h.isModern(r, env) {
		h.modernRequest(w, r, s, env)
		return
	}
	switch {
	case env.Kind == jsonrpc.KindRequest && env.MethodName() == "initialize":
		h.initialize(w, r, env)
	case env.Kind == jsonrpc.KindNotification:
		// A modern client's notification, or a legacy one without its
		// session: nothing to route it to.
		w.WriteHeader(http.StatusAccepted)
	case env.Kind == jsonrpc.KindRequest:
		writeJSONError(w, http.StatusBadRequest, env.ID, jsonrpc.CodeInvalidRequest,
			"Bad Request: no Mcp-Session-Id; initialize first (or send the 2026-07-28 _meta and MCP-Protocol-Version header)", nil)
	default:
		writeJSONError(w, http.StatusBadRequest, env.ID, jsonrpc.CodeInvalidRequest, "Bad Request: a response without a session", nil)
	}
}

// isModern reports whether a sessionless request is of the modern era:
// its MCP-Protocol-Version header names a version that is not a legacy
// one, or its _meta carries a protocol version.
func (h *Handler) isModern(r *http.Request, env jsonrpc.Envelope) bool {
	if v := strings.TrimSpace(r.Header.Get(hdrProtocolVersion)); v != "" && !isLegacyVersion(v) {
		return true
	}
	if env.MethodName() == "server/discover" {
		return true
	}
	meta, _ := jsonrpc.Member(env.Params, "_meta")
	pv, _ := jsonrpc.Member(meta, metaProtocolVersion)
	return pv != nil
}

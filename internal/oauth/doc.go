// Package oauth authorizes snodo's requests to protected MCP servers over
// HTTP: the MCP authorization specification (OAuth 2.1 with PKCE,
// protected resource metadata, authorization server metadata, client ID
// metadata documents and dynamic registration, resource indicators,
// step-up, refresh, issuer checks) and its extensions (client
// credentials, enterprise-managed authorization, DPoP, JWT-bearer
// workload identity).
//
// A Transport wraps the HTTP client's RoundTripper for one server:
//
//	request ──► Transport ── token of this origin only ──► MCP server
//	               │ 401 / 403 insufficient_scope
//	               ▼
//	           discover: WWW-Authenticate resource_metadata, else
//	           /.well-known/oauth-protected-resource{/path}, then
//	           RFC 8414 / OpenID metadata of its authorization server
//	               │
//	               ▼
//	           client: pre-registered ► metadata document ► registered
//	               │
//	               ▼
//	           grant: refresh, or authorization code + PKCE through the
//	           user's AuthorizeFunc (state and iss checked), or a grant
//	           without a user (client credentials, JWT-bearer, ID-JAG)
//	               │
//	               ▼
//	           TokenStore ──► the request is sent again
//
// One authorization runs at a time per Transport; requests that meet a
// 401 meanwhile wait for it (bounded by their ctx) and use its token.
// Requests to the authorization servers go through a separate client
// that never carries the MCP server's token; its transport adds the
// resource to every token request and the DPoP proofs.
//
// Tokens, refresh tokens, client secrets and assertions never appear in
// an error or a log line: errors name the step, the URL and the server's
// OAuth error code, and Token and Client print without their secrets.
package oauth

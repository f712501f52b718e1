package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/oauthserver"
)

// clientMetadataURL is the Client ID Metadata Document URL the suite's
// authorization servers expect from a client that uses one.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// authContext is what MCP_CONFORMANCE_CONTEXT carries for the
// authorization scenarios: pre-registered or machine credentials, the
// enterprise IdP, the workload's JWT.
type authContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	Issuer           string `json:"issuer"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	ValidJWT         string `json:"valid_jwt"`
}

// authOption is how the client authorizes in an authorization scenario:
// the authorization code flow whose user step follows the suite's
// authorization server redirect headlessly, with the scenario's
// pre-registered client where it gives one; or, for the extension
// scenarios, the grant the extension defines.
func authOption(scenario string) (snodo.Option, error) {
	var ac authContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &ac); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	o := snodo.OAuth{
		ClientMetadataURL: clientMetadataURL,
		RedirectURL:       "http://localhost:3000/callback",
		Authorize:         oauthserver.Consent,
	}
	idToken := func(context.Context) (string, error) { return ac.IdPIDToken, nil }
	switch scenario {
	case "auth/pre-registration":
		o.ClientID, o.ClientSecret, o.ClientIssuer = ac.ClientID, ac.ClientSecret, ac.Issuer
	case "auth/client-credentials-basic":
		o = snodo.OAuth{ClientCredentials: true, ClientID: ac.ClientID, ClientSecret: ac.ClientSecret}
	case "auth/client-credentials-jwt":
		key, err := parseKey(ac.PrivateKeyPEM)
		if err != nil {
			return nil, err
		}
		o = snodo.OAuth{ClientCredentials: true, ClientID: ac.ClientID, PrivateKey: key, SigningAlgorithm: ac.SigningAlgorithm}
	case "auth/enterprise-managed-authorization":
		o = snodo.OAuth{ClientID: ac.ClientID, ClientSecret: ac.ClientSecret, IDToken: idToken,
			IdPTokenEndpoint: ac.IdPTokenEndpoint, IdPClientID: ac.IdPClientID}
	case "auth/wif-jwt-bearer":
		o = snodo.OAuth{ClientID: ac.ClientID, JWTBearer: func(context.Context) (string, error) { return ac.ValidJWT, nil }}
	case "auth/dpop", "auth/dpop-nonce":
		o.DPoP = true
	}
	return snodo.WithOAuth(o), nil
}

// parseKey reads a PKCS #8 PEM private key.
func parseKey(p string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, errors.New("private_key_pem holds no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private_key_pem: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private_key_pem: a %T cannot sign", k)
	}
	return s, nil
}

// isAuthScenario reports whether scenario is one of the authorization
// scenarios.
func isAuthScenario(scenario string) bool { return strings.HasPrefix(scenario, "auth/") }

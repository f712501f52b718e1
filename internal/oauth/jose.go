package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// algorithmFor is the JWS algorithm for key: name when given, else the
// usual one for the key's type.
func algorithmFor(key crypto.Signer, name string) (jose.SignatureAlgorithm, error) {
	if name != "" {
		return jose.SignatureAlgorithm(name), nil
	}
	switch k := key.Public().(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	case *rsa.PublicKey:
		return jose.RS256, nil
	case ed25519.PublicKey:
		return jose.EdDSA, nil
	}
	return "", fmt.Errorf("unsupported signing key %T", key)
}

// signJWT signs claims with key.
func signJWT(key crypto.Signer, alg jose.SignatureAlgorithm, opts *jose.SignerOptions, claims any) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		return "", fmt.Errorf("oauth: preparing a %s signer: %w", alg, err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := sig.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("oauth: signing: %w", err)
	}
	return jws.CompactSerialize()
}

// clientAssertion is a private_key_jwt client assertion (RFC 7523
// section 3): issued by and about the client, for the authorization
// server (its issuer identifier as audience), valid five minutes.
func clientAssertion(key crypto.Signer, algName, clientID, issuer string) (string, error) {
	alg, err := algorithmFor(key, algName)
	if err != nil {
		return "", fmt.Errorf("oauth: client assertion: %w", err)
	}
	now := time.Now()
	return signJWT(key, alg, (&jose.SignerOptions{}).WithType("JWT"), map[string]any{
		"iss": clientID,
		"sub": clientID,
		"aud": issuer,
		"iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
		"jti": randomString(),
	})
}

// dpopSigner makes DPoP proofs (RFC 9449 section 4) with one key.
type dpopSigner struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
}

func newDPoPSigner(key crypto.Signer) (*dpopSigner, error) {
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		key = k
	}
	alg, err := algorithmFor(key, "")
	if err != nil {
		return nil, fmt.Errorf("DPoP key: %w", err)
	}
	return &dpopSigner{key: key, alg: alg}, nil
}

// proof is a fresh proof for a request: its method and URL (without
// query or fragment), the server's nonce if it gave one, and for a
// resource request the hash of the access token it accompanies.
func (d *dpopSigner) proof(method string, u *url.URL, nonce, accessToken string) (string, error) {
	htu := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	claims := map[string]any{
		"jti": randomString(),
		"htm": method,
		"htu": htu.String(),
		"iat": time.Now().Unix(),
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(h[:])
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	return signJWT(d.key, d.alg, opts, claims)
}

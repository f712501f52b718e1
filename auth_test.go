package snodo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/snodo/snodo"
)

func TestWithOAuthValidates(t *testing.T) {
	for _, tc := range []struct {
		o    snodo.OAuth
		want string
	}{
		{snodo.OAuth{}, "needs an Authorize function"},
		{snodo.OAuth{ClientCredentials: true}, "client credentials need Client.ID"},
		{snodo.OAuth{JWTBearer: func(context.Context) (string, error) { return "", nil }, ClientCredentials: true, ClientID: "x", ClientSecret: "y"}, "choose one of"},
		{snodo.OAuth{RedirectURL: "http://example.com/cb", ClientCredentials: true, ClientID: "x", ClientSecret: "y"}, "plain HTTP to a host that is not loopback"},
	} {
		_, err := snodo.Connect(t.Context(), "true", nil, snodo.WithOAuth(tc.o))
		assert.ErrorContains(t, err, tc.want)
	}
}

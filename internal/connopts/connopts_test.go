package connopts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/connopts"
)

// SharedOf reads, typed, what a list of snodo options gives the layers
// above a connection; Unowned takes the owner back; a nil option is an
// error naming its place.
func TestSharedOf(t *testing.T) {
	sys := snodoactor.Shared()
	owner := sys.NewLocalPID("someone")
	opts := []snodo.Option{
		snodo.WithTimeout(3 * time.Second), snodo.WithShutdownGrace(time.Second),
		snodo.WithEra(snodo.EraLegacy), snodo.WithOrigin(snodo.Origin{Server: "git", Member: "git-1"}),
		snodo.WithOwner(owner),
	}
	set, err := connopts.SharedOf(opts)
	require.NoError(t, err)
	assert.Equal(t, connopts.Shared{Timeout: 3 * time.Second, ShutdownGrace: time.Second, Era: true,
		OriginServer: "git", OriginMember: "git-1", Owner: owner}, set)

	set, err = connopts.SharedOf(append(opts, connopts.Unowned[snodo.Option](), connopts.ProcessGrace[snodo.Option](5*time.Second)))
	require.NoError(t, err)
	assert.Nil(t, set.Owner)
	assert.Equal(t, 5*time.Second, set.ShutdownGrace)

	_, err = connopts.SharedOf([]snodo.Option{snodo.WithTimeout(time.Second), nil})
	assert.ErrorContains(t, err, "option 2 is nil")
}

// RemoteOf takes what a remote client has and refuses, by place and
// name, an option that sets anything else.
func TestRemoteOf(t *testing.T) {
	caps := snodo.ClientCapabilities{}
	s, err := connopts.RemoteOf[snodo.ClientCapabilities]([]snodo.Option{
		snodo.WithTimeout(2 * time.Second), snodo.WithMaxInputRounds(3), snodo.WithClientCapabilities(caps),
	})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, s.Timeout)
	assert.Equal(t, 3, s.MaxInputRounds)
	require.NotNil(t, s.Capabilities, "given, even with none declared")

	s, err = connopts.RemoteOf[snodo.ClientCapabilities]([]snodo.Option{snodo.WithTimeout(time.Second)})
	require.NoError(t, err)
	assert.Nil(t, s.Capabilities, "not given")

	_, err = connopts.RemoteOf[snodo.ClientCapabilities]([]snodo.Option{snodo.WithTimeout(time.Second), snodo.WithEnv("A", "b")})
	assert.ErrorContains(t, err, "option 2 (WithEnv) does not apply to a remote client")
}

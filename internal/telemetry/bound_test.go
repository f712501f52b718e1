package telemetry

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestBoundCutsAtARuneAndRepairsUTF8(t *testing.T) {
	assert.Equal(t, "echo", Bound("echo", MaxName))
	assert.Len(t, Bound(strings.Repeat("x", 10*MaxName), MaxName), MaxName)

	// "é" is two bytes: a cut inside it steps back to its start.
	got := Bound(strings.Repeat("é", MaxName), MaxName+1)
	assert.True(t, utf8.ValidString(got))
	assert.Len(t, got, MaxName)

	got = Bound("a\xffb", MaxName)
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, "a\uFFFDb", got)

	got = Bound(strings.Repeat("\xff", 2*MaxName), MaxName)
	assert.True(t, utf8.ValidString(got))
	assert.LessOrEqual(t, len(got), MaxName)

	s := "tools/call"
	assert.Zero(t, testing.AllocsPerRun(100, func() { s = Bound(s, MaxName) }), "a string within the bound costs nothing")
}

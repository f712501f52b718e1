package natsembed_test

import (
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

// TestMain checks that a server started and shut down leaves no
// goroutine behind.
func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/internal/oauth"
	"github.com/snodo/snodo/test/oauthserver"
)

// browser plays the user: it reads what snodo prints, opens each
// authorization URL and follows the authorization server's redirect to
// snodo's loopback port, as a browser does.
func browser(t *testing.T) (io.Writer, *int) {
	r, w := io.Pipe()
	opened := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "http") {
				continue
			}
			opened++
			resp, err := http.Get(line)
			if assert.NoError(t, err) {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		}
	})
	t.Cleanup(func() { w.Close(); wg.Wait() })
	return w, &opened
}

// TestLoopbackAuthorizationAndTokenFile drives the interactive code flow
// end to end: the authorization URL printed, the browser sent back to the
// loopback port, the token saved in a 0600 file under the config
// directory and used by the next run without the browser, and logout.
func TestLoopbackAuthorizationAndTokenFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	as := oauthserver.NewAS(t, func(a *oauthserver.AS) { a.Refresh = true })
	rs := oauthserver.NewResource(t, as, nil)
	dir, err := tokenDir()
	require.NoError(t, err)

	run := func(out io.Writer) int {
		l, err := newLoopback(out, "")
		require.NoError(t, err)
		defer l.close()
		tr, err := oauth.NewTransport(rs.URL(), nil, oauth.Config{RedirectURL: l.redirect, Authorize: l.authorize, Store: fileStore{dir: dir}})
		require.NoError(t, err)
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rs.URL(), nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	out, opened := browser(t)
	assert.Equal(t, http.StatusOK, run(out))
	assert.Equal(t, 1, *opened)
	redirect := as.AuthRequests[0].Get("redirect_uri")
	assert.True(t, strings.HasPrefix(redirect, "http://127.0.0.1:"), redirect)

	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	info, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	dinfo, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dinfo.Mode().Perm())

	// The next run uses the stored token: no browser.
	noBrowser, opened2 := browser(t)
	assert.Equal(t, http.StatusOK, run(noBrowser))
	assert.Equal(t, 0, *opened2)

	require.NoError(t, logout(context.Background(), rs.URL()))
	files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
	assert.Empty(t, files)
}

func TestLoopbackRefusesStrayRedirects(t *testing.T) {
	l, err := newLoopback(io.Discard, "")
	require.NoError(t, err)
	defer l.close()
	resp, err := http.Get(l.redirect + "?code=x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no authorization is waiting")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.authorize(ctx, "https://as.example.com/authorize")
	assert.ErrorContains(t, err, "no authorization came back to "+l.redirect)
}

// TestLoopbackAnswersTheBrowserBeforeClosing: the browser gets the whole
// page even when snodo stops listening as soon as the authorization has
// its code (the browser read EOF when the code was handed over before the
// page was written: 1 full-suite run in 3 under load).
func TestLoopbackAnswersTheBrowserBeforeClosing(t *testing.T) {
	for range 50 {
		l, err := newLoopback(io.Discard, "")
		require.NoError(t, err)
		got := make(chan url.Values, 1)
		go func() {
			q, err := l.authorize(t.Context(), "https://as.example.com/authorize")
			assert.NoError(t, err)
			l.close()
			got <- q
		}()
		require.Eventually(t, func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.waiting != nil
		}, 20*time.Second, time.Millisecond, "authorize waits for the redirect")
		resp, err := http.Get(l.redirect + "?code=c")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, string(body), "you can close this tab")
		assert.Equal(t, "c", (<-got).Get("code"))
	}
}

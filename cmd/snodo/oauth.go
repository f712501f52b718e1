package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/oauth"
	"github.com/snodo/snodo/internal/safetext"
)

// authorizeTimeout bounds how long the command line waits for the
// browser to come back from the authorization server.
const authorizeTimeout = 5 * time.Minute

// tokenDir is where the command line keeps OAuth tokens: snodo/oauth
// under the user's config directory ($XDG_CONFIG_HOME or ~/.config on
// Linux, ~/Library/Application Support on macOS, %AppData% on Windows).
func tokenDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory for OAuth tokens: %w", err)
	}
	return filepath.Join(d, "snodo", "oauth"), nil
}

// fileStore is a snodo.TokenStore of one JSON file per server, named by
// a hash of the server's URL, in a directory of mode 0700; each file is
// mode 0600 and replaced whole (written aside, then renamed), so a crash
// never leaves half a token.
type fileStore struct{ dir string }

type storedToken struct {
	Server string           `json:"server"`
	Token  snodo.OAuthToken `json:"token"`
}

func (s fileStore) path(resource string) string {
	sum := sha256.Sum256([]byte(resource))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load reads the token for resource, or nil if there is none.
func (s fileStore) Load(_ context.Context, resource string) (*snodo.OAuthToken, error) {
	raw, err := os.ReadFile(s.path(resource))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st storedToken
	if err := json.Unmarshal(raw, &st); err != nil || st.Server != resource {
		return nil, fmt.Errorf("%s is not a token file for %s; remove it (snodo logout --url %s)", s.path(resource), resource, resource)
	}
	return &st.Token, nil
}

// Save writes the token for resource, readable by the user only.
func (s fileStore) Save(_ context.Context, resource string, t *snodo.OAuthToken) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(storedToken{Server: resource, Token: *t})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".token-*") // mode 0600
	if err != nil {
		return err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), s.path(resource)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// Delete forgets the token for resource.
func (s fileStore) Delete(_ context.Context, resource string) error {
	err := os.Remove(s.path(resource))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// loopback receives the authorization server's redirect on a loopback
// port (RFC 8252 section 7.3): it listens on 127.0.0.1 at a port the
// system picks, or at the port of a fixed redirect URL (a config entry's
// "callbackPort": http://localhost:PORT/callback, where it listens on
// 127.0.0.1 and, when it can, on ::1, either of which "localhost" may
// name), prints the authorization URL for the user, and hands the
// redirect's query to the authorization that waits for it.
type loopback struct {
	out      io.Writer
	redirect string
	srv      *http.Server
	done     sync.WaitGroup // done when every listener has stopped

	mu      sync.Mutex
	waiting chan url.Values // the authorization under way, or nil
}

func newLoopback(out io.Writer, redirect string) (*loopback, error) {
	addr, path := "127.0.0.1:0", "/callback"
	if redirect != "" {
		u, err := url.Parse(redirect)
		if err != nil || u.Port() == "" {
			return nil, fmt.Errorf("the redirect URL %s names no loopback port", redirect)
		}
		addr, path = net.JoinHostPort("127.0.0.1", u.Port()), u.EscapedPath()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if redirect != "" {
			return nil, fmt.Errorf("listening on %s for the authorization redirect (the config's callbackPort; is another program using it?): %w", addr, err)
		}
		return nil, fmt.Errorf("listening on a loopback port for the authorization redirect: %w", err)
	}
	lns := []net.Listener{ln}
	if redirect == "" {
		redirect = "http://" + ln.Addr().String() + path
	} else if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))); err == nil {
		lns = append(lns, ln6) // "localhost" may be ::1 to the browser
	}
	l := &loopback{out: out, redirect: redirect}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range lns {
		l.done.Go(func() { l.srv.Serve(ln) })
	}
	return l, nil
}

func (l *loopback) callback(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	ch := l.waiting
	l.waiting = nil
	l.mu.Unlock()
	if ch == nil {
		http.Error(w, "snodo is not waiting for an authorization.", http.StatusNotFound)
		return
	}
	// The page goes out whole before the code is handed over: the
	// authorization may then end and close the server at once, which
	// would cut off a page still being written (the browser saw EOF).
	const page = "snodo received the authorization; you can close this tab.\n"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	io.WriteString(w, page)
	http.NewResponseController(w).Flush()
	ch <- r.URL.Query()
}

// authorize prints authURL on stderr and waits for the redirect.
func (l *loopback) authorize(ctx context.Context, authURL string) (url.Values, error) {
	ch := make(chan url.Values, 1)
	l.mu.Lock()
	l.waiting = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.waiting == ch {
			l.waiting = nil
		}
		l.mu.Unlock()
	}()
	fmt.Fprintf(l.out, "snodo: the server needs authorization. Open this URL in a browser:\n  %s\nsnodo: waiting for the browser to come back to %s …\n", safetext.Visible(authURL), l.redirect)
	ctx, cancel := context.WithTimeout(ctx, authorizeTimeout)
	defer cancel()
	select {
	case q := <-ch:
		return q, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization came back to %s: %w", l.redirect, context.Cause(ctx))
	}
}

// close stops listening.
func (l *loopback) close() {
	l.srv.Close()
	l.done.Wait()
}

// httpAuth is the option that authorizes the command line's connection
// to serverURL: tokens in the file store, the interactive step on a
// loopback redirect, announced on out. file is a config file's entry's
// "oauth": its client id, the client secret its clientSecretEnv named,
// the redirect URL its callbackPort set, and its scopes (zero: none).
// The returned function stops the listener.
func httpAuth(file snodo.OAuth, out io.Writer) (snodo.Option, func(), error) {
	dir, err := tokenDir()
	if err != nil {
		return nil, nil, err
	}
	l, err := newLoopback(out, file.RedirectURL)
	if err != nil {
		return nil, nil, err
	}
	opt := snodo.WithOAuth(snodo.OAuth{
		ClientID:     file.ClientID,
		ClientSecret: file.ClientSecret,
		RedirectURL:  l.redirect,
		Scopes:       file.Scopes,
		Authorize:    l.authorize,
		Store:        fileStore{dir: dir},
	})
	return opt, l.close, nil
}

// logout forgets the token the command line keeps for serverURL.
func logout(ctx context.Context, serverURL string) error {
	dir, err := tokenDir()
	if err != nil {
		return err
	}
	key, err := oauth.StoreKey(serverURL)
	if err != nil {
		return err
	}
	return fileStore{dir: dir}.Delete(ctx, key)
}

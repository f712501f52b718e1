package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/remote"
)

// toolError is a tool result with isError set: the tool ran and failed.
type toolError struct{ text string }

func (e *toolError) Error() string { return "the tool reported an error: " + e.text }

// exitCode reports err on stderr as one line and returns the exit status.
func (s *session) exitCode(ctx context.Context, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(s.io.err, "snodo: %v\nRun 'snodo -h' for usage.\n", err)
		return exitUsage
	case ctx.Err() != nil && errors.Is(err, snodo.ErrTaskCancelled):
		fmt.Fprintln(s.io.err, "snodo: interrupted; the task was cancelled on the server")
		return exitInterrupted
	case ctx.Err() != nil:
		fmt.Fprintln(s.io.err, "snodo: interrupted; the request was cancelled on the server")
		return exitInterrupted
	}
	fmt.Fprintln(s.io.err, "snodo: "+oneLine(flagWords.Replace(s.describe(err))))
	return exitFailure
}

// flagWords turns the library options its messages name into the flags a
// command-line user can reach.
var flagWords = strings.NewReplacer(
	"(raise the bound with WithMaxInputRounds)", "(raise it with --max-input-rounds)",
	"WithEra(EraModern)", "--era modern",
	"a server that starts slowly may need a longer WithProbeTimeout", "a server that starts slowly may need a longer --probe-timeout (without it the probe waits the shorter of --timeout and 10s)",
	"raise it with the Timeout request option or WithTimeout", "raise it with --timeout",
	"answer it in WithServerRequestHandler and declare it in WithClientCapabilities", "snodo does not answer it",
)

// fromFile reports whether the server is one of the --config file's.
func (s *session) fromFile() bool { return s.cfg.configFile != "" && s.cfg.serverName != "" }

// describe says what went wrong and what to do about it.
func (s *session) describe(err error) string {
	var (
		e    *snodo.Error
		pe   *fs.PathError
		urls *snodo.URLElicitationRequiredError
	)
	switch {
	case errors.As(err, &pe) && s.fromFile():
		return fmt.Sprintf("cannot start the server: %v; check the \"command\" of server %q in %s (and its \"cwd\", or --dir)", pe, s.cfg.serverName, s.cfg.configFile)
	case errors.As(err, &pe):
		return fmt.Sprintf("cannot start the server: %v; check SERVER_CMD (after --) and --dir", pe)
	case errors.Is(err, exec.ErrNotFound) && s.fromFile():
		return fmt.Sprintf("cannot start the server: %s; check the \"command\" of server %q in %s", trim(err), s.cfg.serverName, s.cfg.configFile)
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("cannot start the server: %s; check SERVER_CMD (after --)", trim(err))
	case errors.Is(err, snodo.ErrTimeout) && s.fromFile() && !s.cfg.timeoutSet && s.fileTimeout != 0:
		return fmt.Sprintf("timed out (%d): no answer within %v (the \"timeout\" of server %q in %s); raise it, or give --timeout",
			snodo.CodeTimeout, s.fileTimeout, s.cfg.serverName, s.cfg.configFile)
	case errors.Is(err, snodo.ErrTimeout):
		return fmt.Sprintf("timed out (%d): no answer within %v; raise --timeout", snodo.CodeTimeout, s.cfg.timeout)
	case errors.Is(err, remote.ErrNoHost), errors.Is(err, nats.ErrConnectionReconnecting):
		// Nothing was lost: there is no host, or no NATS, to talk to.
		msg := trim(err)
		if errors.As(err, &e) {
			msg = strings.TrimPrefix(e.Message, "connection closed: ")
		}
		return fmt.Sprintf("%s (%d)", msg, snodo.CodeConnectionClosed)
	case errors.Is(err, snodo.ErrConnectionClosed) && s.cfg.natsURL != "":
		// A remote call: no server of ours wrote to this stderr.
		msg := trim(err)
		if errors.As(err, &e) {
			msg = strings.TrimPrefix(e.Message, "connection closed: ")
		}
		return fmt.Sprintf("connection closed (%d): %s", snodo.CodeConnectionClosed, msg)
	case errors.Is(err, snodo.ErrConnectionClosed):
		msg := trim(err)
		if errors.As(err, &e) {
			msg = strings.TrimPrefix(e.Message, "connection closed: ")
		}
		return fmt.Sprintf("connection closed (%d): %s; the server's stderr above may say why (--verbose shows the wire)",
			snodo.CodeConnectionClosed, msg)
	case errors.Is(err, nats.ErrNoServers):
		return trim(err) + "; check --nats URL: is a NATS server running there? ('snodo node' without --nats embeds one and prints its URL)"
	case errors.Is(err, snodo.ErrInputRequest):
		// snodo's own answer to the server's input request failed: the
		// refusal is snodo's, not the server's.
		if errors.As(err, &e) && e.Code == codeUserRejected {
			return "snodo declined the server's request: " + e.Message
		}
		if errors.As(err, &e) && e.Code == snodo.CodeMethodNotFound {
			return "snodo cannot answer the server's request: " + e.Message
		}
		return "snodo could not answer the server's request: " + trim(err)
	case errors.As(err, &urls):
		// -32042: the server wants the user through a page of its own.
		var open []string
		for _, el := range urls.Elicitations {
			u := "open " + el.URL
			if el.Message != "" {
				u += " (" + el.Message + ")"
			}
			open = append(open, u)
		}
		return fmt.Sprintf("the server needs you to %s, then to run the command again (error %d: %s)",
			strings.Join(open, " and "), urls.Err.Code, urls.Err.Message)
	case errors.As(err, &e) && err != error(e):
		// The library wrapped the server's error with what it was doing
		// (connecting, say): its words come first.
		return trim(err)
	case errors.As(err, &e):
		return fmt.Sprintf("the server answered error %d: %s%s", e.Code, e.Message, hint(s.cfg.command, e.Code))
	}
	return trim(err)
}

// hint suggests what to do about a server error code.
func hint(command string, code int) string {
	switch code {
	case snodo.CodeMethodNotFound:
		if command == "request" {
			return " (the server has no such method; check its name)"
		}
		return " (the server does not offer this)"
	case snodo.CodeInvalidParams:
		if command == "call" {
			return " (check the tool name and arguments: 'snodo tools' lists the tools, 'snodo --json tools' their input schemas)"
		}
		return " (check the parameters)"
	case -32022:
		return " (the server speaks another MCP version)"
	case snodo.CodeInternalError:
		return " (a failure inside the server; its stderr may say more)"
	}
	return ""
}

// trim drops the "snodo: " prefix library errors carry; the CLI adds its own.
func trim(err error) string { return strings.TrimPrefix(err.Error(), "snodo: ") }

// oneLine folds a multi-line message (such as the server's last stderr
// lines) into one line, with its control characters made visible.
func oneLine(s string) string {
	return safetext.Visible(strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " "))
}

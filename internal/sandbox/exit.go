package sandbox

import "errors"

// exitError is a server's wait error with the limit that stopped it.
type exitError struct {
	limit *Error
	wait  error
}

func (e *exitError) Error() string {
	if e.wait == nil {
		return e.limit.Error()
	}
	return e.limit.Error() + "; " + e.wait.Error()
}

func (e *exitError) Unwrap() []error { return []error{e.limit, e.wait} }

// Split returns the limit that stopped a server and its plain wait error,
// when err is what Handle.Exit returned for such a server.
func Split(err error) (limit *Error, wait error, ok bool) {
	var e *exitError
	if !errors.As(err, &e) {
		return nil, err, false
	}
	return e.limit, e.wait, true
}

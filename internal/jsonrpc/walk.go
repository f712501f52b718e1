package jsonrpc

import "errors"

var errNotArray = errors.New("not a JSON array")

// EachMember checks that obj is one JSON object and calls fn with each
// member's key (without quotes, escapes decoded: "\u005fmeta" is _meta)
// and raw value, in order, stopping at fn's first error, which it
// returns. It allocates nothing unless a key is written with escapes.
func EachMember(obj []byte, fn func(key, val []byte) error) error {
	return eachMember(obj, fn)
}

// EachElement checks that arr is one JSON array and calls fn with each
// element's raw value, in order, stopping at fn's first error, which it
// returns. It allocates nothing.
func EachElement(arr []byte, fn func(val []byte) error) error {
	s := scanner{b: arr}
	s.ws()
	if !s.eat('[') {
		return errNotArray
	}
	s.ws()
	if !s.eat(']') {
		for {
			s.ws()
			start := s.i
			if !s.value(0) {
				return errSyntax
			}
			if err := fn(arr[start:s.i]); err != nil {
				return err
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat(']') {
				break
			}
			return errSyntax
		}
	}
	s.ws()
	if s.i != len(arr) {
		return errSyntax
	}
	return nil
}

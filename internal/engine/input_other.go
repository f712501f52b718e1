//go:build !linux

package engine

import "os"

// unreadInput cannot tell on this system: -1.
func unreadInput(*os.File) int { return -1 }

// noReaders cannot tell on this system: false.
func noReaders(*os.File) bool { return false }

// Package handlers runs the answers to server-to-client requests: one
// child actor of the connection per request, at most a bounded number at
// once.
package handlers

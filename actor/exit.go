package actor

import ()

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}

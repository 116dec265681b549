package cmdline

import (
	"errors"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Exit codes, the same in every agentledger program.
const (
	ExitOK          = 0 // success
	ExitFault       = 1 // an integrity fault, or a failed gate
	ExitUsage       = 2 // bad usage or bad input
	ExitUnavailable = 3 // the store is unreachable, or an internal error
)

// ExitError carries an exit code with an error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the process exit code.
func (e *ExitError) ExitCode() int { return e.Code }

// Fault, Usage and Unavailable wrap err with their exit code.
func Fault(err error) error { return &ExitError{Code: ExitFault, Err: err} }

func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

func Unavailable(err error) error { return &ExitError{Code: ExitUnavailable, Err: err} }

// Code maps an error to its exit code: an explicit *ExitError keeps its own;
// bad input is 2; an integrity fault is 1; anything else, an unreachable
// store included, is 3.
func Code(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ledger.ErrInvalidInput):
		return ExitUsage
	case errors.Is(err, ledger.ErrIntegrity), errors.Is(err, store.ErrSessionMismatch):
		return ExitFault
	}
	return ExitUnavailable
}

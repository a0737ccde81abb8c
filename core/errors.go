package core

import (
	"errors"
	"fmt"
)

// Error codes. Tool-failure codes are dsh's and are persisted as
// tool/result.data.error.code; the application codes classify errors for
// transports (web maps them to HTTP statuses in one place).
const (
	CodeUnknownTool           = "UNKNOWN_TOOL"
	CodeInvalidArgs           = "INVALID_ARGS"
	CodeInvalidToolOutput     = "INVALID_TOOL_OUTPUT"
	CodeAborted               = "ABORTED"
	CodeAbortedBeforeDispatch = "ABORTED_BEFORE_DISPATCH"
	CodeToolTimeout           = "TOOL_TIMEOUT"
	CodeToolNotStarted        = "TOOL_NOT_STARTED"
	CodeToolOutcomeUnknown    = "TOOL_OUTCOME_UNKNOWN"
	CodeUnsupportedSchema     = "UNSUPPORTED_SCHEMA"

	// CodeInvalid marks bad input from a caller (malformed request, bad event).
	CodeInvalid = "INVALID"
	// CodeNotFound marks a missing session, call or share.
	CodeNotFound = "NOT_FOUND"
	// CodeConflict marks a request that contradicts stored state.
	CodeConflict = "CONFLICT"
	// CodeUnauthorized marks a missing or invalid credential or share token.
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeForbidden marks a request refused whoever makes it (a foreign
	// Host, a cross-site form).
	CodeForbidden = "FORBIDDEN"
	// CodeUnavailable marks a capability that is switched off or not
	// configured, or a server without capacity right now (retry later).
	CodeUnavailable = "UNAVAILABLE"
	// CodeTooLarge marks a request body over its limit.
	CodeTooLarge = "TOO_LARGE"
	// CodeTimeout marks a request whose body did not arrive in time.
	CodeTimeout = "TIMEOUT"
	// CodeMethodNotAllowed marks a method the route does not answer.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeUnsupportedMediaType marks a body of a type the route does not read.
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// CodeTooManyRequests marks a client past a per-client limit.
	CodeTooManyRequests = "TOO_MANY_REQUESTS"
	// CodeInternal marks everything else.
	CodeInternal = "INTERNAL"
)

// Coded is implemented by errors that carry dsh's structured identity
// (a HarnessError in dsh): a class-like name and a stable code. Only such
// errors produce a persisted {name, code} on a failed tool result.
type Coded interface {
	error
	ErrorName() string
	ErrorCode() string
}

// Error is prism's coded error. Tools return it (or any Coded error) to give
// a failure a durable identity; plain errors fail without one.
type Error struct {
	Name    string // e.g. "FsError"
	Code    string // e.g. "FS_STALE_VERSION"
	Message string // human text, without dsh's "Error: " envelope
	Err     error  // optional cause
}

// NewError returns a coded error with a formatted message.
func NewError(name, code, format string, args ...any) *Error {
	return &Error{Name: name, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Errorf returns an application error with the given code (see the Code*
// application constants); its name is "Error".
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Name: "Error", Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

func (e *Error) Error() string { return e.Message }

// ErrorName returns the error's class-like name.
func (e *Error) ErrorName() string { return e.Name }

// ErrorCode returns the error's stable code.
func (e *Error) ErrorCode() string { return e.Code }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code of the first Coded error in err's chain, or
// CodeInternal when there is none (and "" for a nil error).
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var c Coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return CodeInternal
}

// ErrorInfo is the durable identity of a failure: tool/result.data.error.
type ErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// infoOf returns the {name, code} of a Coded error in err's chain.
func infoOf(err error) *ErrorInfo {
	var c Coded
	if errors.As(err, &c) {
		return &ErrorInfo{Name: c.ErrorName(), Code: c.ErrorCode()}
	}
	return nil
}

package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/views"
)

// statusOf maps an error to its HTTP status: the one place where core's
// error codes become statuses.
func statusOf(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	if status, ok := codeStatus[core.ErrorCode(err)]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// messageOf returns the text shown for err: the coded message for client
// errors, a generic text for internal ones (whose detail is only logged).
func messageOf(err error, status int) string {
	if status >= 500 && status != http.StatusServiceUnavailable {
		return "internal error"
	}
	// A store that could not be reached says so without its driver's
	// cause, which may name the database's address.
	var public interface{ PublicMessage() string }
	if errors.As(err, &public) {
		return public.PublicMessage()
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if s, ok := he.Message.(string); ok {
			return s
		}
		return http.StatusText(he.Code)
	}
	return err.Error()
}

// shareRetryMessage is all a share link's reader is told of a failure
// that may pass (a busy or unreachable store): the error's own text names
// sessions (a nested child's id among them) and stays in the server's log.
const shareRetryMessage = "temporarily unavailable, retry"

// shareFailureRetry is the Retry-After of a share read that failed for a
// while (503) without saying for how long.
const shareFailureRetry = 2 * time.Second

// shareMessageOf is messageOf for a share link's reader: never the error's
// own text, which may name a session the link hides (a child, a fork's
// source), only what its status says — shareRetryMessage for a 503,
// "internal error" for another 5xx.
func shareMessageOf(status int) string {
	switch {
	case status == http.StatusServiceUnavailable:
		return shareRetryMessage
	case status >= 500:
		return "internal error"
	case status == http.StatusNotFound:
		return "this session was deleted"
	}
	return strings.ToLower(http.StatusText(status))
}

// shareFailure is an error of a share route as its reader is answered
// (shareMessageOf, with a Retry-After for a 503) while handleError logs
// the whole of it.
type shareFailure struct{ err error }

func (e shareFailure) Error() string { return e.err.Error() }
func (e shareFailure) Unwrap() error { return e.err }

// PublicMessage is what the reader is told (messageOf).
func (e shareFailure) PublicMessage() string { return shareMessageOf(statusOf(e.err)) }

// RetryAfter is the wrapped error's own, else shareFailureRetry for a 503.
func (e shareFailure) RetryAfter() time.Duration {
	var busy interface{ RetryAfter() time.Duration }
	if errors.As(e.err, &busy) && busy.RetryAfter() > 0 {
		return busy.RetryAfter()
	}
	if statusOf(e.err) == http.StatusServiceUnavailable {
		return shareFailureRetry
	}
	return 0
}

// streamMessageOf is the text an open stream reports for err: messageOf's,
// or shareMessageOf's on a share link's stream (shared).
func streamMessageOf(err error, shared bool) string {
	if shared {
		return shareMessageOf(statusOf(err))
	}
	return messageOf(err, statusOf(err))
}

// handleError is Echo's HTTPErrorHandler: JSON for /api/ and non-HTML
// clients, the error page otherwise. It never writes into a response that
// already started (a stream reports its errors itself).
func (s *Server) handleError(err error, c echo.Context) {
	req := c.Request()
	if f := bodyFailure(c); f != nil {
		err = f // whatever the handler made of it: 413 or 408
	}
	status := statusOf(err)
	var busy interface{ RetryAfter() time.Duration }
	isBusy := errors.As(err, &busy) && busy.RetryAfter() > 0
	if status >= 500 {
		// A refusal for want of capacity (503 with Retry-After, say every
		// import slot taken) is the server working as designed: a warning.
		level := slog.LevelError
		if isBusy && status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		s.log.Log(req.Context(), level, "request failed", append(requestAttrs(c), logkey.Status, status, logkey.Err, err)...)
	}
	if c.Response().Committed || errors.Is(err, context.Canceled) {
		return
	}
	if req.ContentLength != 0 {
		// Whatever is left of the body is not read (a stalled client would
		// hold the connection); the connection closes after the answer.
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	if isBusy {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(busy.RetryAfter().Seconds()))))
	}
	msg := messageOf(err, status)
	if allow := c.Response().Header().Get(echo.HeaderAllow); status == http.StatusMethodNotAllowed && allow != "" {
		msg = fmt.Sprintf("%s is not allowed on %s; it answers %s", req.Method, req.URL.Path, allow)
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if strings.HasPrefix(req.URL.Path, "/api/") || !strings.Contains(req.Header.Get("Accept"), "text/html") {
		_ = c.JSON(status, map[string]string{"error": msg, "code": codeOf(err, status)})
		return
	}
	_ = s.render(c, status, views.ErrorPage(s.meta(http.StatusText(status)), status, msg))
}

// codeOf returns the code an error answer carries: the error's own, else
// the one its status stands for (Echo's errors: a route or method that does
// not exist, a refused Host).
func codeOf(err error, status int) string {
	var c core.Coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	if code, ok := statusCodes[status]; ok {
		return code
	}
	return core.CodeInternal
}

// codeStatus maps core's application codes to HTTP statuses.
var codeStatus = map[string]int{
	core.CodeInvalid:              http.StatusBadRequest,
	core.CodeInvalidArgs:          http.StatusBadRequest,
	core.CodeUnauthorized:         http.StatusUnauthorized,
	core.CodeForbidden:            http.StatusForbidden,
	core.CodeNotFound:             http.StatusNotFound,
	core.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	core.CodeTimeout:              http.StatusRequestTimeout,
	core.CodeConflict:             http.StatusConflict,
	core.CodeTooLarge:             http.StatusRequestEntityTooLarge,
	core.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	core.CodeTooManyRequests:      http.StatusTooManyRequests,
	core.CodeUnavailable:          http.StatusServiceUnavailable,
	// A fork's refusals (dsh's SessionForkError codes).
	core.CodeOpenTurn:             http.StatusConflict,
	core.CodeSessionNotFound:      http.StatusNotFound,
	core.CodeSessionAlreadyExists: http.StatusConflict,
	core.CodeInvalidBoundary:      http.StatusBadRequest,
}

// statusCodes is codeStatus read backwards, for errors that carry only a
// status.
var statusCodes = func() map[int]string {
	m := map[int]string{}
	for code, status := range codeStatus {
		switch code {
		case core.CodeInvalidArgs, // 400 reads as INVALID
			core.CodeOpenTurn, core.CodeSessionNotFound, core.CodeSessionAlreadyExists, core.CodeInvalidBoundary: // a fork's own
		default:
			m[status] = code
		}
	}
	return m
}()

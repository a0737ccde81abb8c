package web

import (
	"context"
	"errors"
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
	switch core.ErrorCode(err) {
	case core.CodeInvalid, core.CodeInvalidArgs:
		return http.StatusBadRequest
	case core.CodeNotFound:
		return http.StatusNotFound
	case core.CodeConflict:
		return http.StatusConflict
	case core.CodeUnauthorized:
		return http.StatusUnauthorized
	case core.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// messageOf returns the text shown for err: the coded message for client
// errors, a generic text for internal ones (whose detail is only logged).
func messageOf(err error, status int) string {
	if status >= 500 && status != http.StatusServiceUnavailable {
		return "internal error"
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

// handleError is Echo's HTTPErrorHandler: JSON for /api/ and non-HTML
// clients, the error page otherwise. It never writes into a response that
// already started (a stream reports its errors itself).
func (s *Server) handleError(err error, c echo.Context) {
	req := c.Request()
	status := statusOf(err)
	if status >= 500 {
		s.log.ErrorContext(req.Context(), "request failed", logkey.Method, req.Method, logkey.Path, req.URL.Path, logkey.Status, status, logkey.Err, err)
	}
	if c.Response().Committed || errors.Is(err, context.Canceled) {
		return
	}
	var busy interface{ RetryAfter() time.Duration }
	if errors.As(err, &busy) && busy.RetryAfter() > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(busy.RetryAfter().Seconds()))))
	}
	msg := messageOf(err, status)
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

func codeOf(err error, status int) string {
	var c core.Coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	switch status {
	case http.StatusNotFound:
		return core.CodeNotFound
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return core.CodeInvalid
	case http.StatusForbidden, http.StatusUnauthorized:
		return core.CodeUnauthorized
	}
	return core.CodeInternal
}

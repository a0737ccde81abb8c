package web

import (
	stdgzip "compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"prism/core"
	"prism/core/logkey"
)

// maxOTLPBody bounds an OTLP/HTTP request body, before and after gzip.
const maxOTLPBody = 16 << 20

// OTLP/HTTP media types.
const (
	otlpProtobuf = "application/x-protobuf"
	otlpJSON     = "application/json"
)

// TraceReceiver takes OTLP/HTTP trace exports (POST /v1/traces).
type TraceReceiver interface {
	// ReceiveTraces decodes an ExportTraceServiceRequest (protobuf, or
	// OTLP's JSON when isJSON), stores its spans and updates the sessions
	// derived from them. Its answer's partial_success counts and explains
	// the spans it rejected. An error of code core.CodeInvalid is a
	// malformed body; core.CodeUnavailable a store that cannot take it now.
	ReceiveTraces(ctx context.Context, body []byte, isJSON bool) (*coltracepb.ExportTraceServiceResponse, error)
}

// handleOTLPTraces is POST /v1/traces as the OTLP/HTTP specification
// says: a protobuf or JSON ExportTraceServiceRequest, optionally gzipped;
// 200 with an ExportTraceServiceResponse, else a google.rpc.Status in the
// request's encoding — 400 malformed, 413 past maxOTLPBody, 415 another
// content type or encoding, 429 with Retry-After past Tuning.OTLPReceives
// exports at once, 503 with Retry-After when the store cannot take it now.
func (s *Server) handleOTLPTraces(c echo.Context) error {
	r := c.Request()
	mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	isJSON := mt == otlpJSON
	if mt != otlpProtobuf && !isJSON {
		// No encoding to answer in: JSON if the client accepts it, else
		// protobuf (every SDK exporter's).
		isJSON = strings.Contains(r.Header.Get(echo.HeaderAccept), otlpJSON)
		return otlpStatus(c, isJSON, http.StatusUnsupportedMediaType, code.Code_INVALID_ARGUMENT,
			fmt.Sprintf("unsupported content type %q: send %s or %s", mt, otlpProtobuf, otlpJSON))
	}
	if s.deps.Traces == nil {
		c.Response().Header().Set("Retry-After", "60")
		return otlpStatus(c, isJSON, http.StatusServiceUnavailable, code.Code_UNAVAILABLE, "this server does not receive traces")
	}
	select {
	case s.otlpSlots <- struct{}{}:
		defer func() { <-s.otlpSlots }()
	default:
		// Overloaded: the sender retries after Retry-After (OTLP/HTTP's
		// retryable 429), its body unread.
		r.Close = true
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(s.tune.OTLPRetryAfter/time.Second)))
		return otlpStatus(c, isJSON, http.StatusTooManyRequests, code.Code_RESOURCE_EXHAUSTED,
			fmt.Sprintf("this server is receiving %d trace exports already: retry later", cap(s.otlpSlots)))
	}
	var in io.Reader = io.LimitReader(r.Body, maxOTLPBody+1)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get(echo.HeaderContentEncoding))); enc {
	case "", "identity":
	case "gzip":
		zr, err := stdgzip.NewReader(in)
		if err != nil {
			return otlpStatus(c, isJSON, http.StatusBadRequest, code.Code_INVALID_ARGUMENT, "malformed gzip body: "+err.Error())
		}
		defer zr.Close()
		in = io.LimitReader(zr, maxOTLPBody+1)
	default:
		return otlpStatus(c, isJSON, http.StatusUnsupportedMediaType, code.Code_INVALID_ARGUMENT,
			fmt.Sprintf("unsupported content encoding %q: send gzip or none", enc))
	}
	body, err := io.ReadAll(in)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge) || len(body) > maxOTLPBody:
		r.Close = true
		return otlpStatus(c, isJSON, http.StatusRequestEntityTooLarge, code.Code_RESOURCE_EXHAUSTED,
			fmt.Sprintf("the request body is larger than the limit of %s", byteSize(maxOTLPBody)))
	case err != nil && (errors.Is(err, stdgzip.ErrChecksum) || errors.Is(err, stdgzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF)):
		return otlpStatus(c, isJSON, http.StatusBadRequest, code.Code_INVALID_ARGUMENT, "malformed body: "+err.Error())
	case err != nil:
		return fmt.Errorf("read OTLP body: %w", err)
	}
	bodyReceived(c)
	resp, err := s.deps.Traces.ReceiveTraces(r.Context(), body, isJSON)
	switch core.ErrorCode(err) {
	case "":
	case core.CodeInvalid:
		return otlpStatus(c, isJSON, http.StatusBadRequest, code.Code_INVALID_ARGUMENT, err.Error())
	case core.CodeUnavailable, core.CodeTimeout:
		c.Response().Header().Set("Retry-After", "5")
		return otlpStatus(c, isJSON, http.StatusServiceUnavailable, code.Code_UNAVAILABLE, err.Error())
	default:
		s.log.ErrorContext(r.Context(), "receive OTLP traces", logkey.Err, err)
		return otlpStatus(c, isJSON, http.StatusInternalServerError, code.Code_INTERNAL, "the spans could not be stored")
	}
	return otlpWrite(c, isJSON, http.StatusOK, resp)
}

// otlpStatus answers a google.rpc.Status in the request's encoding.
func otlpStatus(c echo.Context, isJSON bool, status int, rpc code.Code, msg string) error {
	return otlpWrite(c, isJSON, status, &statuspb.Status{Code: int32(rpc), Message: msg})
}

func otlpWrite(c echo.Context, isJSON bool, status int, m proto.Message) error {
	var b []byte
	var err error
	ct := otlpProtobuf
	if isJSON {
		ct = otlpJSON
		b, err = protojson.Marshal(m)
	} else {
		b, err = proto.Marshal(m)
	}
	if err != nil {
		return fmt.Errorf("encode OTLP answer: %w", err)
	}
	return c.Blob(status, ct, b)
}

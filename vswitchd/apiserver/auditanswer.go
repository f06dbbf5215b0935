package apiserver

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
)

// auditMark records whether a call's audit line has been written. authorizeHTTP puts one in
// the context of every write call it lets through; Server.audit sets it, so that authorizeHTTP
// knows, once the call has ended, whether it must write the line itself (the call ended
// before the interceptor ran: Connect refused its body or its headers).
type auditMark struct{ done atomic.Bool }

type auditMarkKey struct{}

func withAuditMark(ctx context.Context, m *auditMark) context.Context {
	return context.WithValue(ctx, auditMarkKey{}, m)
}

// markAudited records that the audit line of the call ctx belongs to has been written; it does
// nothing for a call without a mark (a read, or a call that did not come through
// authorizeHTTP).
func markAudited(ctx context.Context) {
	if m, _ := ctx.Value(auditMarkKey{}).(*auditMark); m != nil {
		m.done.Store(true)
	}
}

// maxAnswerCapture bounds the part of an answer answerRecorder keeps: a Connect error, a
// Connect end-of-stream message or gRPC-Web trailers — a code and a message, far shorter.
const maxAnswerCapture = 64 << 10

// answerRecorder is the http.ResponseWriter authorizeHTTP gives a write call. It passes
// everything through, and keeps what tells the status the client got: the HTTP status, the
// headers (the underlying writer's), and — until the call's audit line is written — the first
// maxAnswerCapture bytes of the body (once the interceptor has audited the call, nothing is
// kept).
type answerRecorder struct {
	http.ResponseWriter
	mark   *auditMark
	status int // 0 until the header is written
	body   []byte
}

func (w *answerRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.mark.done.Load() && len(w.body) < maxAnswerCapture {
		w.body = append(w.body, p[:min(len(p), maxAnswerCapture-len(w.body))]...)
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes the underlying writer (Connect flushes gRPC answers through http.Flusher).
func (w *answerRecorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *answerRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code returns the status the client got, once the handler has returned: grpc-status from the
// headers or trailers (gRPC; gRPC-Web trailers-only), from the trailers frame (gRPC-Web), the
// error in the end-of-stream message (Connect streaming), the code of the JSON error (Connect
// unary), or, for any other answer, the code a Connect or gRPC client derives from the HTTP
// status. 0 is OK.
func (w *answerRecorder) code() connect.Code {
	h := w.Header()
	if c, ok := grpcStatus(h.Get("Grpc-Status")); ok {
		return c
	}
	if v := h[http.TrailerPrefix+"Grpc-Status"]; len(v) > 0 {
		if c, ok := grpcStatus(v[0]); ok {
			return c
		}
	}
	ct := h.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/grpc-web"):
		for _, f := range answerFrames(w.body) {
			if f.flags&0x80 != 0 && f.flags&0x01 == 0 {
				for line := range strings.SplitSeq(string(f.data), "\r\n") {
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "grpc-status") {
						if c, ok := grpcStatus(v); ok {
							return c
						}
					}
				}
			}
		}
		return connect.CodeUnknown // the client finds no status
	case strings.HasPrefix(ct, "application/grpc"):
		return connect.CodeUnknown
	case strings.HasPrefix(ct, "application/connect+"):
		for _, f := range answerFrames(w.body) {
			if f.flags&0x02 != 0 && f.flags&0x01 == 0 {
				var end struct {
					Error *struct{ Code string }
				}
				if json.Unmarshal(f.data, &end) != nil {
					return connect.CodeUnknown
				}
				if end.Error == nil {
					return 0
				}
				return connectCode(end.Error.Code)
			}
		}
		return connect.CodeUnknown
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK // net/http answers 200 for a handler that wrote nothing
	}
	if status != http.StatusOK && strings.HasPrefix(ct, "application/json") {
		var e struct{ Code string }
		if json.Unmarshal(w.body, &e) == nil && e.Code != "" {
			return connectCode(e.Code)
		}
	}
	switch status {
	case http.StatusOK:
		return 0
	case http.StatusBadRequest:
		return connect.CodeInternal
	case http.StatusUnauthorized:
		return connect.CodeUnauthenticated
	case http.StatusForbidden:
		return connect.CodePermissionDenied
	case http.StatusNotFound:
		return connect.CodeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return connect.CodeUnavailable
	}
	return connect.CodeUnknown
}

// grpcStatus parses a grpc-status value; 0 is OK.
func grpcStatus(v string) (connect.Code, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, false
	}
	return connect.Code(n), true
}

// connectCode parses a Connect error code ("invalid_argument"); an unknown one is Unknown.
func connectCode(s string) connect.Code {
	var c connect.Code
	if c.UnmarshalText([]byte(s)) != nil {
		return connect.CodeUnknown
	}
	return c
}

type answerFrame struct {
	flags byte
	data  []byte
}

// answerFrames splits b into enveloped messages (a flags byte, a big-endian 32-bit length, the
// data), ending at the first one that is cut short.
func answerFrames(b []byte) []answerFrame {
	var out []answerFrame
	for len(b) >= 5 {
		n := binary.BigEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) {
			break
		}
		out = append(out, answerFrame{b[0], b[5 : 5+n]})
		b = b[5+n:]
	}
	return out
}

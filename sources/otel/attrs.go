package otel

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"prism/core"
)

// attrs is a span's attributes by key; the first of a repeated key wins, as
// the OTLP specification leaves duplicates undefined.
type attrs map[string]*commonpb.AnyValue

func attrsOf(kvs []*commonpb.KeyValue) attrs {
	a := make(attrs, len(kvs))
	for _, kv := range kvs {
		if kv == nil || kv.Value == nil {
			continue
		}
		if _, dup := a[kv.Key]; !dup {
			a[kv.Key] = kv.Value
		}
	}
	return a
}

// str returns a string attribute ("" when absent or of another type).
func (a attrs) str(key string) string {
	if v, ok := a[key].GetValue().(*commonpb.AnyValue_StringValue); ok {
		return v.StringValue
	}
	return ""
}

// int returns an int attribute; a numeric string or a whole double is read too.
func (a attrs) int(key string) (int64, bool) {
	switch v := a[key].GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return v.IntValue, true
	case *commonpb.AnyValue_DoubleValue:
		if v.DoubleValue == math.Trunc(v.DoubleValue) && math.Abs(v.DoubleValue) < 1<<53 {
			return int64(v.DoubleValue), true
		}
	case *commonpb.AnyValue_StringValue:
		if n, err := strconv.ParseInt(v.StringValue, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// text returns an attribute as text: a string as is, anything else as its
// JSON (see anyJSON). ok is false when the attribute is absent.
func (a attrs) text(key string) (string, bool) {
	v, ok := a[key]
	if !ok {
		return "", false
	}
	if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
		return s.StringValue, true
	}
	b, err := core.MarshalNoEscape(anyJSON(v))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// anyJSON converts an OTLP AnyValue to a Go value that encodes as the JSON
// it stands for: a kvlist is an object, an array an array, bytes base64.
// Numbers that JSON cannot hold losslessly (NaN, ±Inf, ints past 2^53)
// become strings, so the result passes core.CheckJSON.
func anyJSON(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		if x.IntValue > 1<<53 || x.IntValue < -(1<<53) {
			return strconv.FormatInt(x.IntValue, 10)
		}
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		f := x.DoubleValue
		if math.IsNaN(f) || math.IsInf(f, 0) || (f == 0 && math.Signbit(f)) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyJSON(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			if _, dup := out[kv.GetKey()]; !dup {
				out[kv.GetKey()] = anyJSON(kv.GetValue())
			}
		}
		return out
	}
	return nil
}

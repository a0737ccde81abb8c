package core_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"prism/core"
)

// tinyPNG is a 1×1 PNG.
var tinyPNG = base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"))

// TestImageResultViewValidate: only bounded raster images whose bytes match
// their media type pass; anything a hostile presenter or log could carry
// into a data: URL (markup, scripts, mislabelled bytes) is refused.
func TestImageResultViewValidate(t *testing.T) {
	ok := core.InlineImage{MediaType: "image/png", Data: tinyPNG, Width: 1, Height: 1}
	svg := base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`))
	tests := []struct {
		name string
		img  []core.InlineImage
		want string // "" = valid
	}{
		{"png", []core.InlineImage{ok}, ""},
		{"none", nil, "0 images"},
		{"too many", make([]core.InlineImage, core.MaxInlineImages+1), "9 images"},
		{"svg bytes", []core.InlineImage{{MediaType: "image/svg+xml", Data: svg, Width: 1, Height: 1}}, `not "image/svg+xml"`},
		{"svg labelled png", []core.InlineImage{{MediaType: "image/png", Data: svg, Width: 1, Height: 1}}, `not "image/png"`},
		{"png labelled jpeg", []core.InlineImage{{MediaType: "image/jpeg", Data: tinyPNG, Width: 1, Height: 1}}, `not "image/jpeg"`},
		{"not base64", []core.InlineImage{{MediaType: "image/png", Data: `javascript:alert(1)"><x`, Width: 1, Height: 1}}, "data:"},
		{"no size", []core.InlineImage{{MediaType: "image/png", Data: tinyPNG}}, "no size"},
		{"too large", []core.InlineImage{{MediaType: "image/png", Data: strings.Repeat("A", (core.MaxInlineImageBytes+64)*4/3), Width: 1, Height: 1}}, "data over"},
	}
	for _, tt := range tests {
		err := (&core.ImageResultView{Images: tt.img}).Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	data, err := core.MarshalNoEscape(&core.ImageResultView{Images: []core.InlineImage{ok}, Content: core.Text("t")})
	if err != nil {
		t.Fatal(err)
	}
	v, err := core.DecodeResultView(data)
	if err != nil || v.Card() != core.CardImage {
		t.Fatalf("round trip %s: %v, %v", data, v, err)
	}
	if _, err := core.DecodeResultView([]byte(`{"card":"image","images":[{"mediaType":"image/svg+xml","data":"` + svg + `","width":1,"height":1}]}`)); err == nil {
		t.Error("decoded an SVG image view")
	}
}

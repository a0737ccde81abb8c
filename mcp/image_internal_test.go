package mcp

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

func seedImages(t testing.TB) [][]byte {
	img := image.NewRGBA(image.Rect(0, 0, 400, 90))
	for x := range 400 {
		img.Set(x, x%90, color.RGBA{uint8(x), 80, 200, 255})
	}
	var p, j, g bytes.Buffer
	if png.Encode(&p, img) != nil || jpeg.Encode(&j, img, nil) != nil || gif.Encode(&g, img, nil) != nil {
		t.Fatal("encode seeds")
	}
	return [][]byte{p.Bytes(), j.Bytes(), g.Bytes()}
}

// TestThumbnailKinds: each raster kind scales to a valid, bounded
// thumbnail with the aspect ratio kept.
func TestThumbnailKinds(t *testing.T) {
	for _, data := range seedImages(t) {
		im, err := decodeImage(base64.StdEncoding.EncodeToString(data))
		if err != nil {
			t.Fatal(err)
		}
		th, ok := im.thumbnail()
		if !ok || th.Width != 320 || th.Height != 72 || th.Validate() != nil {
			t.Errorf("%s: thumbnail %dx%d ok=%v err=%v", im.mediaType, th.Width, th.Height, ok, th.Validate())
		}
	}
}

// FuzzServerImage: whatever bytes a server sends as an image, decoding
// never panics, and a thumbnail, when one is made, is always valid for
// the image card.
func FuzzServerImage(f *testing.F) {
	for _, s := range seedImages(f) {
		f.Add(s)
	}
	f.Add([]byte("<svg/>"))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x7f\xff\xff\xff\x7f\xff\xff\xff\x08\x02\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := decodeImage(base64.StdEncoding.EncodeToString(data))
		if err != nil {
			return
		}
		if im.width <= 0 || im.height <= 0 {
			t.Fatalf("decoded a %dx%d image", im.width, im.height)
		}
		if th, ok := im.thumbnail(); ok {
			if err := th.Validate(); err != nil {
				t.Fatalf("invalid thumbnail: %v", err)
			}
		}
		_ = im.ref()
	})
}

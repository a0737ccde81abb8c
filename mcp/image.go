package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"prism/core"
)

// Thumbnail bounds: the longest edge of a thumbnail, the most pixels an
// image may have to be decoded for one, and the thumbnails one result keeps.
const (
	thumbEdge      = 320
	maxDecodePixel = 12_000_000 // 48 MB as RGBA: a 4K screenshot fits
	maxThumbs      = 4
	maxThumbTotal  = 256 << 10
)

// serverImage is an image block the server sent, decoded and checked.
type serverImage struct {
	mediaType     string // sniffed from the bytes, never the server's claim
	data          []byte
	width, height int
}

var errNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// decodeImage decodes an MCP image block's base64 data and reads its
// header: the media type comes from the bytes (an SVG or a mislabelled
// file is refused), the size from the image's own header.
func decodeImage(b64 string) (serverImage, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return serverImage{}, fmt.Errorf("invalid base64: %w", err)
	}
	mt := core.SniffImage(data)
	if mt == "" {
		return serverImage{}, errNotImage
	}
	cfg, err := decodeConfig(mt, data)
	if err != nil {
		return serverImage{}, fmt.Errorf("%s: %w", mt, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return serverImage{}, fmt.Errorf("%s: empty image", mt)
	}
	return serverImage{mediaType: mt, data: data, width: cfg.Width, height: cfg.Height}, nil
}

// codecs reads each accepted media type.
var codecs = map[string]struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}{
	"image/png":  {png.DecodeConfig, png.Decode},
	"image/jpeg": {jpeg.DecodeConfig, jpeg.Decode},
	"image/gif":  {gif.DecodeConfig, gif.Decode},
	"image/webp": {webp.DecodeConfig, webp.Decode},
}

func decodeConfig(mt string, data []byte) (image.Config, error) {
	return codecs[mt].config(bytes.NewReader(data))
}

func decodeFull(mt string, data []byte) (image.Image, error) {
	return codecs[mt].decode(bytes.NewReader(data))
}

// ref is the image's attachment reference in model content. prism has no
// attachment store: the id names the bytes by their digest.
func (im serverImage) ref() *core.ImageBlock {
	sum := sha256.Sum256(im.data)
	return &core.ImageBlock{Attachment: core.ImageAttachmentRef{
		AttachmentID: "sha256:" + hex.EncodeToString(sum[:]),
		MediaType:    im.mediaType,
		Bytes:        int64(len(im.data)),
		Width:        im.width,
		Height:       im.height,
	}}
}

// thumbnail returns a bounded inline copy of the image: the image itself
// when it is small enough, else a scaled-down PNG (or JPEG for a JPEG, or
// when the PNG is too large). ok is false when no thumbnail fits the bounds.
func (im serverImage) thumbnail() (core.InlineImage, bool) {
	out := core.InlineImage{
		Original: &core.ImageDimension{Width: im.width, Height: im.height},
		Bytes:    int64(len(im.data)),
	}
	if im.width <= thumbEdge && im.height <= thumbEdge && len(im.data) <= core.MaxInlineImageBytes {
		out.MediaType, out.Width, out.Height = im.mediaType, im.width, im.height
		out.Data = base64.StdEncoding.EncodeToString(im.data)
		return out, true
	}
	if im.width*im.height > maxDecodePixel {
		return out, false
	}
	src, err := decodeFull(im.mediaType, im.data)
	if err != nil {
		return out, false
	}
	w, h := fit(im.width, im.height, thumbEdge)
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	mt := "image/png"
	if im.mediaType == "image/jpeg" || png.Encode(&buf, dst) != nil || buf.Len() > core.MaxInlineImageBytes {
		buf.Reset()
		mt = "image/jpeg"
		flat := image.NewRGBA(dst.Bounds())
		draw.Draw(flat, flat.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		draw.Draw(flat, flat.Bounds(), dst, image.Point{}, draw.Over)
		if jpeg.Encode(&buf, flat, &jpeg.Options{Quality: 80}) != nil || buf.Len() > core.MaxInlineImageBytes {
			return out, false
		}
	}
	out.MediaType, out.Width, out.Height = mt, w, h
	out.Data = base64.StdEncoding.EncodeToString(buf.Bytes())
	return out, true
}

// fit scales w×h to fit edge×edge, keeping the aspect ratio.
func fit(w, h, edge int) (int, int) {
	if w >= h {
		return edge, max(1, h*edge/w)
	}
	return max(1, w*edge/h), edge
}

package core

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
)

// CardImage is the result card that shows images inline beside the text.
const CardImage = "image"

// Bounds of an image result view: a card shows at most MaxInlineImages
// thumbnails of at most MaxInlineImageBytes each (decoded), so a page of
// image cards stays light.
const (
	MaxInlineImages     = 8
	MaxInlineImageBytes = 96 << 10
)

// ImageResultView shows a result's images inline — small thumbnails whose
// bytes came from the tool (for an MCP tool, from the server's image
// content, kept in the result's meta) — and the result text beside them.
// It is a prism addition to dsh's card vocabulary; a client without it
// falls back to the generic card.
type ImageResultView struct {
	Title string `json:"title,omitempty"`
	// Images are the thumbnails to show, in order.
	Images []InlineImage `json:"images"`
	// Content is the text shown with the images (usually the result's text
	// blocks).
	Content Content `json:"content,omitempty"`
}

// InlineImage is one thumbnail carried in durable data. Only raster types
// whose bytes match their media type are accepted, so a view can never
// smuggle markup (SVG) or a remote URL into a page.
type InlineImage struct {
	// MediaType is image/png, image/jpeg, image/gif or image/webp.
	MediaType string `json:"mediaType"`
	// Data is the thumbnail's bytes, standard base64.
	Data string `json:"data"`
	// Width and Height are the thumbnail's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Original is the size of the image the thumbnail was made from.
	Original *ImageDimension `json:"original,omitempty"`
	// Bytes is the size of the original image.
	Bytes int64 `json:"bytes,omitempty"`
	// Name is an optional label.
	Name string `json:"name,omitempty"`
}

// Card implements ResultView.
func (*ImageResultView) Card() string { return CardImage }

// ViewTitle implements ResultView.
func (v *ImageResultView) ViewTitle() string { return v.Title }

func (*ImageResultView) isResultView() {}

// Validate implements ResultView: one to MaxInlineImages images, each a
// bounded, well-formed raster image.
func (v *ImageResultView) Validate() error {
	if len(v.Images) == 0 || len(v.Images) > MaxInlineImages {
		return fmt.Errorf("image view: %d images, want 1 to %d", len(v.Images), MaxInlineImages)
	}
	for i, im := range v.Images {
		if err := im.Validate(); err != nil {
			return fmt.Errorf("image view: images[%d]: %w", i, err)
		}
	}
	return nil
}

// Validate checks the media type, the size and that the bytes are an image
// of that type.
func (im InlineImage) Validate() error {
	if im.Width <= 0 || im.Height <= 0 {
		return errors.New("no size")
	}
	if base64.StdEncoding.DecodedLen(len(im.Data)) > MaxInlineImageBytes+3 {
		return fmt.Errorf("data over %d bytes", MaxInlineImageBytes)
	}
	data, err := base64.StdEncoding.DecodeString(im.Data)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if len(data) > MaxInlineImageBytes {
		return fmt.Errorf("data over %d bytes", MaxInlineImageBytes)
	}
	if got := SniffImage(data); got == "" || got != im.MediaType {
		return fmt.Errorf("data is not %q", im.MediaType)
	}
	return nil
}

// SniffImage returns the media type of a PNG, JPEG, GIF or WebP image from
// its leading bytes, or "" for anything else.
func SniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *ImageResultView) MarshalJSON() ([]byte, error) {
	type plain ImageResultView
	return marshalView(v, (*plain)(v))
}

package views

import (
	"bytes"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

var (
	mdOnce   sync.Once
	mdEngine goldmark.Markdown
	mdPolicy *bluemonday.Policy
)

func markdownSetup() {
	// goldmark drops raw HTML by default; bluemonday then allows only a
	// conservative element set and http(s) links.
	mdEngine = goldmark.New(goldmark.WithExtensions(extension.GFM))
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowImages() // kept by UGC; images are stripped below
	p.AllowElements()
	mdPolicy = p
}

// markdown renders untrusted markdown to sanitized HTML: goldmark (GFM,
// raw HTML omitted) then bluemonday (UGC policy, http(s) links only, no
// images, no inline styles or scripts). The output is safe to embed.
func markdown(src string) string {
	mdOnce.Do(markdownSetup)
	src = clean(src)
	src, cut := capBytes(src, maxTextBytes)
	var buf bytes.Buffer
	if err := mdEngine.Convert([]byte(src), &buf); err != nil {
		buf.Reset()
		buf.WriteString("<pre>")
		buf.WriteString(escapeText(src))
		buf.WriteString("</pre>")
	}
	out := mdPolicy.SanitizeBytes(stripImages(buf.Bytes()))
	s := clean(string(out))
	if cut {
		s += `<p class="cut">… message cut at ` + Bytes(maxTextBytes) + `</p>`
	}
	return s
}

// stripImages removes <img> tags: a transcript must not fetch remote images.
func stripImages(b []byte) []byte {
	for {
		i := bytes.Index(b, []byte("<img"))
		if i < 0 {
			return b
		}
		j := bytes.IndexByte(b[i:], '>')
		if j < 0 {
			return b[:i]
		}
		b = append(b[:i:i], b[i+j+1:]...)
	}
}

func escapeText(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(s)
}

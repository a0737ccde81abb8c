// Package static holds the browser assets prism serves under /static/: the
// stylesheet, a tiny clipboard module, the session filter bar, the icon and
// the Datastar client.
//
// datastar.js is not committed: `go generate ./...` copies it from the pinned
// Go module github.com/starfederation/datastar@v1.0.0 (checksum-verified) by
// running internal/cmd/copyds. It must exist before `go build` or `go vet`.
package static

//go:generate go run ../internal/cmd/copyds

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

// FS holds every asset, at the root (app.css, app.js, datastar.js, …).
//
//go:embed app.css app.js filter.js travel.js compare.js icon.svg datastar.js datastar.js.map
var FS embed.FS

// Hash returns a short content hash of the named asset, for cache-busting
// query strings, or "" when the asset does not exist.
func Hash(name string) string {
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

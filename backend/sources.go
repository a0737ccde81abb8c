package backend

import (
	"context"

	"prism/core"
	"prism/web"
)

// sourceInfoReader is a store that keeps sessions' source info (db and
// pgstore do).
type sourceInfoReader interface {
	SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error)
}

var _ web.SourceInfos = Source{}

// SourceInfo returns what session id's source is, when the store keeps it
// (false: nothing recorded, or a store that keeps none).
func (s Source) SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error) {
	if r, ok := s.Store.(sourceInfoReader); ok {
		return r.SourceInfo(ctx, id)
	}
	return core.SourceInfo{}, false, nil
}

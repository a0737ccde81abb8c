package core_test

import (
	"context"

	"prism/core"
	"prism/core/tools"
)

// The seed demo's note tool and its types.
type (
	noteArgs = tools.NoteArgs
	note     = tools.Note
)

// noteTool returns the seed's note tool; a non-nil execute replaces its body
// so a test can make the body misbehave.
func noteTool(execute func(ctx context.Context, a noteArgs, run *core.Run) (note, error)) *core.Tool {
	def := tools.NoteDefinition()
	def.IsConcurrencySafe = nil
	if execute != nil {
		def.Execute = execute
	}
	return core.MustDefine(def)
}

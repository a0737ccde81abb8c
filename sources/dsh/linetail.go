package dsh

import (
	"bufio"
	"io"
)

// LineTail reads a foreign transcript that is still being written,
// keeping its decoder's state between reads: fed the file's complete
// lines in order, a chunk at a time, it says at any point what a whole
// read of the lines fed so far (Foreign.ReadPath) would return — so a
// watcher decodes only what a file grew by.
type LineTail interface {
	// Feed decodes the lines r holds, every one complete (ending in a
	// newline), after those fed before. An error (a line over the
	// limits) is the one a whole read would fail with; the LineTail is
	// not to be fed again after it.
	Feed(r *bufio.Reader) error
	// Logs returns what a whole read of the lines fed so far returns,
	// and per log the number of its first events that no later line
	// changes (settled): the decoder has emitted them for good, while
	// the rest (a step still open, an assistant message waiting for its
	// last block) are what the end of the file closes for now. Logs
	// leaves the LineTail as it was: feeding more goes on from the same
	// state.
	Logs() (logs []*Log, settled []int, err error)
	// Mem is about the bytes of decoded events it holds, as
	// Limits.MaxMemoryBytes counts them: what keeping it costs.
	Mem() int64
}

// FeedFileAt feeds t the bytes [from, to) of the file f at path, which
// end at the end of a line; an error names the file, as ReadFileAt's do.
func FeedFileAt(t LineTail, path string, f io.ReaderAt, from, to int64) error {
	return withFile(t.Feed(bufio.NewReaderSize(io.NewSectionReader(f, from, to-from), 64<<10)), path, "")
}

// TailLogs is t.Logs for the file at path: an error names the file.
func TailLogs(t LineTail, path string) ([]*Log, []int, error) {
	logs, settled, err := t.Logs()
	return logs, settled, withFile(err, path, "")
}

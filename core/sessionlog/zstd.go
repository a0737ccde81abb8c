package sessionlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"prism/core"
)

const (
	frameMagic       = 0xFD2FB528
	skippableMin     = 0x184D2A50
	skippableMax     = 0x184D2A5F
	maxBlockSize     = 128 << 10
	maxDecoderWindow = 128 << 20
)

// Frame is the byte range of one complete zstd frame.
type Frame struct {
	Start, End int
	Skippable  bool // a skippable (metadata) frame: no plaintext
}

// errIncomplete marks a frame cut off by the end of the input.
var errIncomplete = errors.New("incomplete frame")

// ScanFrames walks the zstd frame structure of b (RFC 8878: magic, frame
// header, 3-byte block headers up to the last block, optional checksum)
// without decompressing, the way dsh's scanZstdFrames does. It returns the
// complete frames and the offset where they end; bytes after that offset are
// an incomplete (torn) final frame. A bad magic, a reserved bit or a reserved
// block type is corruption (*FormatError naming the frame and its offset).
func ScanFrames(b []byte) (frames []Frame, end int, err error) {
	off := 0
	for off < len(b) {
		n, skippable, err := scanFrame(b[off:])
		if errors.Is(err, errIncomplete) {
			return frames, off, nil
		}
		if err != nil {
			return frames, off, &FormatError{Frame: len(frames), Offset: int64(off), Reason: err.Error()}
		}
		frames = append(frames, Frame{Start: off, End: off + n, Skippable: skippable})
		off += n
	}
	return frames, off, nil
}

// scanFrame returns the length of the frame at the start of b.
func scanFrame(b []byte) (int, bool, error) {
	if len(b) < 4 {
		return 0, false, errIncomplete
	}
	magic := binary.LittleEndian.Uint32(b)
	if magic >= skippableMin && magic <= skippableMax {
		if len(b) < 8 {
			return 0, false, errIncomplete
		}
		n := 8 + int64(binary.LittleEndian.Uint32(b[4:]))
		if n > int64(len(b)) {
			return 0, false, errIncomplete
		}
		return int(n), true, nil
	}
	if magic != frameMagic {
		return 0, false, fmt.Errorf("corrupt: invalid zstd frame magic %#08x", magic)
	}
	if len(b) < 5 {
		return 0, false, errIncomplete
	}
	d := b[4]
	if d&0x08 != 0 {
		return 0, false, fmt.Errorf("corrupt: reserved bit set in the zstd frame header")
	}
	single := d&0x20 != 0
	hdr := 1
	if !single {
		hdr++ // window descriptor
	}
	hdr += [4]int{0, 1, 2, 4}[d&0x03]
	switch d >> 6 {
	case 0:
		if single {
			hdr++
		}
	case 1:
		hdr += 2
	case 2:
		hdr += 4
	case 3:
		hdr += 8
	}
	p := 4 + hdr
	for {
		if p+3 > len(b) {
			return 0, false, errIncomplete
		}
		bh := uint32(b[p]) | uint32(b[p+1])<<8 | uint32(b[p+2])<<16
		p += 3
		last := bh&1 != 0
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0, 2:
			if size > maxBlockSize {
				return 0, false, fmt.Errorf("corrupt: zstd block of %d bytes exceeds the 128 KiB maximum", size)
			}
			p += size
		case 1:
			p++
		case 3:
			return 0, false, fmt.Errorf("corrupt: reserved zstd block type")
		}
		if p > len(b) {
			return 0, false, errIncomplete
		}
		if last {
			break
		}
	}
	if d&0x04 != 0 {
		p += 4
		if p > len(b) {
			return 0, false, errIncomplete
		}
	}
	return p, false, nil
}

var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(maxDecoderWindow),
		zstd.WithDecoderMaxMemory(uint64(DefaultLimits().MaxLogBytes)),
	)
	if err != nil {
		panic(err) // only invalid options fail
	}
	return d
}}

// decompress decodes zstd data (one frame, or a torn frame's prefix),
// producing at most limit bytes; more is an error. With prefix set, a decode
// error ends the output without failing (the complete blocks are kept).
func decompress(data []byte, limit int64, prefix bool) ([]byte, error) {
	dec := decoders.Get().(*zstd.Decoder)
	defer decoders.Put(dec)
	if err := dec.Reset(bytes.NewReader(data)); err != nil {
		if prefix {
			return nil, nil
		}
		return nil, err
	}
	defer dec.Reset(nil) //nolint:errcheck // releases the input
	var out bytes.Buffer
	_, err := io.Copy(&out, io.LimitReader(dec, limit+1))
	if int64(out.Len()) > limit {
		return nil, fmt.Errorf("decompressed text exceeds the limit of %d bytes", limit)
	}
	if err != nil && !prefix {
		return nil, err
	}
	return out.Bytes(), nil
}

// DecodeZstd decodes a dsh session.jsonl.zstd file held in data.
func DecodeZstd(data []byte, lim Limits) (*Log, error) {
	lim = lim.orDefault()
	frames, end, err := ScanFrames(data)
	if err != nil {
		return nil, err
	}
	s := &scanner{mode: modeStrict}
	budget := lim.MaxLogBytes
	line := 0
	fi := -1 // index of the last data frame
	for i, f := range frames {
		if f.Skippable {
			continue
		}
		fi = i
		text, err := decompress(data[f.Start:f.End], budget, false)
		if err != nil {
			return nil, &FormatError{Frame: i, Offset: int64(f.Start), Reason: "corrupt zstd frame: " + err.Error()}
		}
		budget -= int64(len(text))
		if len(text) == 0 || text[len(text)-1] != '\n' {
			return nil, &FormatError{Frame: i, Offset: int64(f.Start), Reason: "corrupt: the frame's text does not end with a newline (a torn record inside a complete frame)"}
		}
		if err := s.lines(text, i, &line, lim); err != nil {
			return nil, withFrameOffset(err, int64(f.Start))
		}
	}
	if !s.header {
		if len(data) == 0 {
			return nil, &FormatError{Frame: -1, Offset: -1, Reason: "empty file: no session header"}
		}
		return nil, &FormatError{Frame: 0, Offset: 0, Reason: "truncated: the header frame is incomplete"}
	}
	if end < len(data) {
		ti := fi + 1
		recovered := 0
		text, _ := decompress(data[end:], budget, true)
		if cut := bytes.LastIndexByte(text, '\n'); cut >= 0 {
			s.mode = modeStop
			before := len(s.log.Events)
			_ = s.lines(text[:cut+1], ti, &line, lim) // stops at the first bad record
			recovered = len(s.log.Events) - before
		}
		s.log.Torn = fmt.Sprintf("frame %d (byte %d) is incomplete (a torn tail of %d bytes); %d events recovered from its decodable prefix",
			ti, end, len(data)-end, recovered)
	}
	l := s.log
	return &l, nil
}

func withFrameOffset(err error, off int64) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Offset < 0 {
		fe.Offset = off
	}
	return err
}

// lines feeds the newline-terminated records of text to the scanner.
func (s *scanner) lines(text []byte, frame int, line *int, lim Limits) error {
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		*line++
		pos := Position{Frame: frame, Line: *line}
		if i > lim.MaxLineBytes {
			return errAt(pos, "line is longer than the limit of %d bytes", lim.MaxLineBytes)
		}
		if err := s.record(text[:i], pos); err != nil {
			return err
		}
		text = text[i+1:]
	}
	return nil
}

// EncodeFrame compresses text into one independent zstd frame with a
// checksum, as dsh writes each append batch. prism never writes dsh's files;
// this exists for fixtures and tests.
func EncodeFrame(text []byte) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(text, nil), nil
}

// AppendZstdLog appends a whole dsh zstd log: frame 0 holds the header line,
// then one frame per batch (packed as dsh packs each batch).
func AppendZstdLog(dst []byte, h core.SessionHeader, batches [][]core.Event) ([]byte, error) {
	hdr := append(AppendHeader(nil, h), '\n')
	f, err := EncodeFrame(hdr)
	if err != nil {
		return dst, err
	}
	dst = append(dst, f...)
	for _, batch := range batches {
		text, err := AppendDshLines(nil, batch)
		if err != nil {
			return dst, err
		}
		if f, err = EncodeFrame(text); err != nil {
			return dst, err
		}
		dst = append(dst, f...)
	}
	return dst, nil
}

package dsh

import (
	"bufio"
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
	frameMagic   = 0xFD2FB528
	skippableMin = 0x184D2A50
	skippableMax = 0x184D2A5F
	maxBlockSize = 128 << 10
)

// Frame is the byte range of one complete zstd frame.
type Frame struct {
	Start, End int
	Skippable  bool // a skippable (metadata) frame: no plaintext
}

// ScanFrames walks the zstd frame structure of b (RFC 8878: magic, frame
// header, 3-byte block headers up to the last block, optional checksum)
// without decompressing, the way dsh's scanZstdFrames does. It returns the
// complete frames and the offset where they end; bytes after that offset are
// an incomplete (torn) final frame. A bad magic, a reserved bit or a reserved
// block type is corruption (*FormatError naming the frame and its offset).
func ScanFrames(b []byte) (frames []Frame, end int, err error) {
	src := bufio.NewReaderSize(bytes.NewReader(b), 4<<10)
	var fr frameReader
	for {
		err := fr.start(src)
		if err == nil && !fr.skippable {
			err = fr.finish()
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, errTorn):
			return frames, end, nil
		case err != nil:
			return frames, end, &FormatError{Frame: len(frames), Offset: int64(end), Reason: err.Error()}
		}
		frames = append(frames, Frame{Start: end, End: end + int(fr.n), Skippable: fr.skippable})
		end += int(fr.n)
	}
}

// maxDecoderWindow bounds the history one zstd decoder keeps, and so its
// memory: a frame that declares a larger window (or, single-segment, a
// larger content size) is refused. dsh's frames are one append batch each,
// compressed at Node's default level: their windows are far smaller.
const maxDecoderWindow = 16 << 20

var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // synchronous streaming: no goroutines, no read-ahead
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxDecoderWindow),
		zstd.WithDecoderMaxMemory(maxDecoderWindow),
	)
	if err != nil {
		panic(err) // only invalid options fail
	}
	return d
}}

func getDecoder() *zstd.Decoder { return decoders.Get().(*zstd.Decoder) }

func putDecoder(d *zstd.Decoder) {
	_ = d.Reset(nil) // drop the input (the history buffer stays for reuse)
	decoders.Put(d)
}

// errTorn marks input that ends inside a zstd frame.
var errTorn = errors.New("the input ends inside the frame")

// frameState is where a frameReader is in its frame.
type frameState int

const (
	stBlock    frameState = iota // next: a block header
	stChecksum                   // next: the 4-byte checksum
	stEnd                        // the frame is complete
)

// frameReader passes exactly one zstd frame from src through, parsing its
// structure (RFC 8878: magic, frame header, 3-byte block headers up to the
// last block, optional checksum) as the bytes go by, the way dsh's
// scanZstdFrames walks it — so a decoder reading from it stops at the
// frame's end, and a frame cut off by the end of the input is told apart
// from a corrupt one without buffering the frame.
type frameReader struct {
	src       *bufio.Reader
	n         int64 // bytes of the frame passed so far
	hdr       [18]byte
	pend      []byte // structural bytes parsed but not yet passed on
	left      int64  // payload bytes of the current block (or the checksum) to pass
	state     frameState
	check     bool  // a checksum follows the last block
	skippable bool  // a skippable frame: no plaintext
	torn      bool  // the input ended inside the frame
	err       error // sticky: errTorn or a corruption
}

// start reads the header of the frame at src's position. It returns io.EOF
// at the end of the input, errTorn (fr.torn) for a header cut off, and an
// error for corruption. A skippable frame is consumed whole.
func (fr *frameReader) start(src *bufio.Reader) error {
	*fr = frameReader{src: src}
	b, _ := src.Peek(4)
	switch {
	case len(b) == 0:
		return io.EOF
	case len(b) < 4:
		return fr.cut(len(b))
	}
	magic := binary.LittleEndian.Uint32(b)
	if magic >= skippableMin && magic <= skippableMax {
		fr.skippable = true
		if b, _ = src.Peek(8); len(b) < 8 {
			return fr.cut(len(b))
		}
		size := int64(binary.LittleEndian.Uint32(b[4:]))
		_, _ = src.Discard(8)
		n, _ := src.Discard(int(size))
		fr.n = 8 + int64(n)
		if int64(n) < size {
			fr.torn, fr.err = true, errTorn
			return errTorn
		}
		fr.state = stEnd
		return nil
	}
	if magic != frameMagic {
		return fr.corrupt("corrupt: invalid zstd frame magic %#08x", magic)
	}
	if b, _ = src.Peek(5); len(b) < 5 {
		return fr.cut(len(b))
	}
	d := b[4]
	if d&0x08 != 0 {
		return fr.corrupt("corrupt: reserved bit set in the zstd frame header")
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
	if b, _ = src.Peek(4 + hdr); len(b) < 4+hdr {
		return fr.cut(len(b))
	}
	fr.pend = fr.hdr[:copy(fr.hdr[:], b)]
	_, _ = src.Discard(len(b))
	fr.n = int64(len(b))
	fr.check = d&0x04 != 0
	return nil
}

// cut consumes the n bytes left of a frame the input ends inside.
func (fr *frameReader) cut(n int) error {
	_, _ = fr.src.Discard(n)
	fr.n += int64(n)
	fr.torn, fr.err = true, errTorn
	return errTorn
}

func (fr *frameReader) corrupt(format string, args ...any) error {
	fr.err = fmt.Errorf(format, args...)
	return fr.err
}

// Read implements io.Reader: the frame's bytes, then io.EOF at its end;
// io.ErrUnexpectedEOF when the input ends inside it.
func (fr *frameReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	empty := 0 // reads of src that returned nothing and no error
	for {
		switch {
		case errors.Is(fr.err, errTorn):
			return 0, io.ErrUnexpectedEOF
		case fr.err != nil:
			return 0, fr.err
		case len(fr.pend) > 0:
			n := copy(p, fr.pend)
			fr.pend = fr.pend[n:]
			return n, nil
		case fr.left > 0:
			if int64(len(p)) > fr.left {
				p = p[:fr.left]
			}
			n, err := fr.src.Read(p)
			fr.n += int64(n)
			fr.left -= int64(n)
			switch {
			case n > 0:
				return n, nil
			case errors.Is(err, io.EOF):
				fr.torn, fr.err = true, errTorn
			case err != nil:
				fr.err = err
			default:
				if empty++; empty > 100 {
					fr.err = io.ErrNoProgress
				}
			}
			continue
		}
		switch fr.state {
		case stEnd:
			return 0, io.EOF
		case stChecksum:
			fr.left, fr.state = 4, stEnd
			continue
		}
		b, _ := fr.src.Peek(3)
		if len(b) < 3 {
			_ = fr.cut(len(b))
			continue
		}
		bh := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		size := int64(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0, 2:
			if size > maxBlockSize {
				return 0, fr.corrupt("corrupt: zstd block of %d bytes exceeds the 128 KiB maximum", size)
			}
			fr.left = size
		case 1:
			fr.left = 1
		case 3:
			return 0, fr.corrupt("corrupt: reserved zstd block type")
		}
		fr.pend = fr.hdr[:copy(fr.hdr[:], b)]
		_, _ = fr.src.Discard(3)
		fr.n += 3
		if bh&1 != 0 { // last block
			fr.state = stEnd
			if fr.check {
				fr.state = stChecksum
			}
		}
	}
}

// finish reads the rest of the frame's structure without decoding it and
// reports how the frame ends: nil when complete, errTorn when the input
// ends inside it, else the corruption.
func (fr *frameReader) finish() error {
	_, err := io.Copy(io.Discard, fr)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errTorn
	}
	return err
}

// recorder consumes complete record lines: a scanner, or a Tail's
// cross-Feed check.
type recorder interface {
	record(line []byte, pos Position) error
}

// zstdText is the running state of decoding one log's frames.
type zstdText struct {
	lim  Limits
	dec  *zstd.Decoder
	lr   *lineReader
	line int   // lines consumed
	left int64 // decompressed text still allowed (Limits.MaxLogBytes)
}

func newZstdText(lim Limits) *zstdText {
	return &zstdText{lim: lim, dec: getDecoder(), lr: newLineReader(eofReader{}, lim.MaxLineBytes), left: lim.MaxLogBytes}
}

func (z *zstdText) close() { putDecoder(z.dec) }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// frame decodes the data frame fr has started (frame index i, at byte off)
// and feeds its records to s. It returns torn=true when the input ends
// inside the frame: the records of its decodable prefix were fed, up to the
// first that does not decode. A complete frame must decode entirely: its
// text ends with a newline and every record is good; otherwise the error is
// a *FormatError naming the frame.
func (z *zstdText) frame(s recorder, fr *frameReader, i int, off int64) (torn bool, err error) {
	fail := func(format string, args ...any) error {
		return &FormatError{Frame: i, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	// settle decides what a problem means: corruption inside a complete
	// frame, the end of the decodable prefix inside a torn one.
	settle := func(problem error) (bool, error) {
		switch end := fr.finish(); {
		case errors.Is(end, errTorn):
			return true, nil
		case end != nil:
			return false, fail("%v", end)
		}
		return false, problem
	}
	if err := z.dec.Reset(fr); err != nil {
		return settle(fail("corrupt zstd frame: %v", zstdReason(err)))
	}
	z.lr.reset(z.dec)
	empty := true
	for {
		line, nl, rerr := z.lr.next()
		switch {
		case errors.Is(rerr, io.EOF):
			if empty {
				return false, fail("corrupt: the frame's text does not end with a newline (a torn record inside a complete frame)")
			}
			return false, nil
		case errors.Is(rerr, errLongLine):
			return false, errAt(Position{Frame: i, Line: z.line + 1}, "line is longer than the limit of %d bytes", z.lim.MaxLineBytes)
		case rerr != nil:
			return settle(fail("corrupt zstd frame: %v", zstdReason(rerr)))
		}
		empty = false
		z.left -= int64(len(line)) + 1
		if z.left < 0 {
			return false, fail("decompressed text exceeds the limit of %d bytes", z.lim.MaxLogBytes)
		}
		if !nl {
			// The text ends without a newline: a torn frame's cut record,
			// or a complete frame holding a torn record.
			return settle(fail("corrupt: the frame's text does not end with a newline (a torn record inside a complete frame)"))
		}
		z.line++
		if err := s.record(line, Position{Frame: i, Line: z.line}); err != nil {
			if fe := (*FormatError)(nil); errors.As(err, &fe) && fe.overBudget {
				return false, withFrameOffset(err, off)
			}
			return settle(withFrameOffset(err, off))
		}
	}
}

// zstdReason words a decoder error, naming the window limit when that is
// what refused the frame.
func zstdReason(err error) string {
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return fmt.Sprintf("the frame needs a zstd window larger than the limit of %s", sizeText(maxDecoderWindow))
	}
	return err.Error()
}

// DecodeZstd decodes a dsh session.jsonl.zstd file held in data.
func DecodeZstd(data []byte, lim Limits) (*Log, error) {
	lim = lim.OrDefault()
	return decodeZstd(bufio.NewReaderSize(bytes.NewReader(data), 4<<10), lim, newBudget(lim.MaxMemoryBytes))
}

// decodeZstd decodes a dsh session.jsonl.zstd file read from src, one frame
// and one line at a time.
func decodeZstd(src *bufio.Reader, lim Limits, b *budget) (*Log, error) {
	s := &scanner{mode: modeStrict, budget: b}
	z := newZstdText(lim)
	defer z.close()
	var fr frameReader
	var off int64
	dataFrames := 0
	for i := 0; ; i++ {
		err := fr.start(src)
		if errors.Is(err, io.EOF) {
			break
		}
		torn := errors.Is(err, errTorn)
		if err != nil && !torn {
			return nil, &FormatError{Frame: i, Offset: off, Reason: err.Error()}
		}
		before := len(s.log.Events)
		if !torn && !fr.skippable {
			if torn, err = z.frame(s, &fr, i, off); err != nil {
				return nil, err
			}
		}
		if torn {
			if dataFrames == 0 {
				return nil, &FormatError{Frame: 0, Offset: 0, Reason: "truncated: the header frame is incomplete"}
			}
			rest, _ := io.Copy(io.Discard, src) // nothing can follow a torn frame
			s.log.Torn = fmt.Sprintf("frame %d (byte %d) is incomplete (a torn tail of %d bytes); %d events recovered from its decodable prefix",
				i, off, fr.n+rest, len(s.log.Events)-before)
			break
		}
		if !fr.skippable {
			dataFrames++
		}
		off += fr.n
	}
	if !s.header {
		if off == 0 {
			return nil, &FormatError{Frame: -1, Offset: -1, Reason: "empty file: no session header"}
		}
		return nil, &FormatError{Frame: 0, Offset: 0, Reason: "truncated: the header frame is incomplete"}
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

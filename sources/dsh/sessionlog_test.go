package dsh_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/sources/dsh"
)

func readFixture(t *testing.T, name string) []*dsh.Log {
	t.Helper()
	logs, _, err := dsh.ReadFile(filepath.Join(fixtureDir, name), dsh.Limits{})
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", name, err)
	}
	return logs
}

func eventLines(t *testing.T, events []core.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func TestDecode_basicFormatsAgree(t *testing.T) {
	h, want, _ := basicLog()
	for _, name := range []string{"basic/session.jsonl", "basic/session.jsonl.zstd"} {
		t.Run(name, func(t *testing.T) {
			logs := readFixture(t, name)
			if len(logs) != 1 {
				t.Fatalf("got %d logs, want 1", len(logs))
			}
			l := logs[0]
			if diff := cmp.Diff(h, l.Header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(eventLines(t, want), eventLines(t, l.Events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if l.Torn != "" {
				t.Errorf("Torn = %q, want none", l.Torn)
			}
			if len(l.Pos) != len(l.Events) {
				t.Errorf("len(Pos) = %d, want %d", len(l.Pos), len(l.Events))
			}
		})
	}
}

func TestDecode_tornFrameIgnored(t *testing.T) {
	l := readFixture(t, "torn/session.jsonl.zstd")[0]
	if got, want := len(l.Events), 30; got != want {
		t.Fatalf("torn zstd log: %d events, want %d (the complete frames)", got, want)
	}
	if !strings.Contains(l.Torn, "frame 4") || !strings.Contains(l.Torn, "incomplete") {
		t.Errorf("Torn = %q, want it to name incomplete frame 4", l.Torn)
	}
}

func TestDecode_tornFramePrefixRecovered(t *testing.T) {
	// A frame of several 128 KiB blocks cut inside a later block: the
	// complete records of the decodable prefix are kept, as dsh does.
	h, events, _ := basicLog()
	b := &logBuilder{t: 1}
	for i := 0; i < 4000; i++ {
		b.add(core.EventTodoWrite, `{"todos":[{"content":"`+strings.Repeat("x", 60)+`","status":"pending"}]}`)
	}
	for i := range b.events {
		b.events[i].Seq += int64(len(events))
	}
	data := must(dsh.AppendZstdLog(nil, h, [][]core.Event{events, b.events}))
	frames, _, _ := dsh.ScanFrames(data)
	last := frames[len(frames)-1]
	cut := data[:last.End-100]
	l, err := dsh.DecodeZstd(cut, dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := len(l.Events) - len(events)
	if got <= 0 || got >= len(b.events) {
		t.Fatalf("recovered %d of %d events from the torn frame, want some but not all", got, len(b.events))
	}
	for i, e := range l.Events {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func TestDecode_crashedLineIgnored(t *testing.T) {
	_, want := crashedLog()
	l := readFixture(t, "crashed/session.jsonl")[0]
	if diff := cmp.Diff(eventLines(t, want), eventLines(t, l.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !strings.Contains(l.Torn, "line 7") {
		t.Errorf("Torn = %q, want it to name line 7", l.Torn)
	}
}

func TestDecode_exportZip(t *testing.T) {
	ph, pe, ch, ce := familyLogs()
	logs := readFixture(t, "export/session-export.zip")
	if len(logs) != 2 {
		t.Fatalf("got %d logs, want 2", len(logs))
	}
	if logs[0].Header.ID != ph.ID || logs[1].Header.ID != ch.ID {
		t.Fatalf("ids = %s, %s; want %s then %s", logs[0].Header.ID, logs[1].Header.ID, ph.ID, ch.ID)
	}
	if len(logs[0].Events) != len(pe) || len(logs[1].Events) != len(ce) {
		t.Errorf("event counts %d, %d; want %d, %d", len(logs[0].Events), len(logs[1].Events), len(pe), len(ce))
	}
	if logs[1].Entry != "subagents/"+childID+"/session.jsonl" || logs[1].Header.ParentSession != parentID {
		t.Errorf("child entry %q parent %q", logs[1].Entry, logs[1].Header.ParentSession)
	}
}

func TestDecode_badInput(t *testing.T) {
	tests := []struct {
		file string
		want []string // substrings of the one error
	}{
		{"bad/seq-gap.jsonl", []string{"bad/seq-gap.jsonl", "line 5", "seq gap: expected seq 3, got 4"}},
		{"bad/non-json.jsonl", []string{"bad/non-json.jsonl", "line 5", "not valid JSON"}},
		{"bad/version.jsonl", []string{"bad/version.jsonl", "line 1", "unsupported session format version 7"}},
		{"bad/corrupt-frame.jsonl.zstd", []string{"corrupt-frame.jsonl.zstd", "frame 2 (byte", "corrupt zstd frame"}},
		{"bad/truncated-header.jsonl.zstd", []string{"truncated-header.jsonl.zstd", "frame 0", "truncated: the header frame is incomplete"}},
		{"bad/truncated.zip", []string{"truncated.zip", "not a readable zip archive"}},
		{"bad/zip-bomb.zip", []string{"zip-bomb.zip", "zip bomb"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, _, err := dsh.ReadFile(filepath.Join(fixtureDir, tt.file), dsh.Limits{})
			if err == nil {
				t.Fatalf("ReadFile(%s) succeeded, want an error", tt.file)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ReadFile(%s) error = %q, want it to contain %q", tt.file, err, w)
				}
			}
			var fe *dsh.FormatError
			if !errors.As(err, &fe) || core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("error %T has code %s, want a *FormatError with %s", err, core.ErrorCode(err), core.CodeInvalid)
			}
		})
	}
}

func TestDecode_hugeLine(t *testing.T) {
	h, _ := crashedLog()
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(dsh.AppendHeader(nil, h), '\n'))
	f.WriteString(`{"type":"user/message","seq":0,"time":1,"data":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 100; i++ {
		f.Write(chunk)
	}
	f.WriteString("\"}\n")
	f.Close()
	_, _, err = dsh.ReadFile(path, dsh.Limits{})
	if err == nil || !strings.Contains(err.Error(), "huge.jsonl: line 2: line is longer than the limit") {
		t.Fatalf("ReadFile(100 MB line) error = %v, want a line-length error naming line 2", err)
	}
}

func TestDecode_zipEntryLimit(t *testing.T) {
	var entries [][2]any
	for i := 0; i < 5000; i++ {
		entries = append(entries, [2]any{"media/" + strings.Repeat("m", 8) + strconv.Itoa(i), []byte{}})
	}
	data := zipOf(entries...)
	_, _, err := dsh.Decode(bytes.NewReader(data), int64(len(data)), dsh.Limits{})
	if err == nil || !strings.Contains(err.Error(), "5000 entries, over the limit of 4096") {
		t.Fatalf("Decode(5000-entry zip) error = %v", err)
	}
}

func TestWriteJSONL_roundTrip(t *testing.T) {
	for _, name := range []string{"basic/session.jsonl.zstd", "crashed/session.jsonl", "export/session-export.zip"} {
		for _, l := range readFixture(t, name) {
			var first, second bytes.Buffer
			if err := dsh.WriteJSONL(&first, l.Header, l.Events); err != nil {
				t.Fatal(err)
			}
			again, err := dsh.DecodeJSONL(bytes.NewReader(first.Bytes()), dsh.Limits{})
			if err != nil {
				t.Fatalf("%s: decoding prism's own export: %v", name, err)
			}
			if err := dsh.WriteJSONL(&second, again.Header, again.Events); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first.Bytes(), second.Bytes()) {
				t.Errorf("%s: export → import → export differs", name)
			}
		}
	}
}

func TestPack_roundTrip(t *testing.T) {
	h, events, _ := basicLog()
	text := plainLog(h, events, nil)
	if n := bytes.Count(text, []byte("-chunks\"")); n != 4 {
		t.Errorf("packed rows = %d, want 4", n)
	}
	l, err := dsh.DecodeJSONL(bytes.NewReader(text), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eventLines(t, events), eventLines(t, l.Events)); diff != "" {
		t.Errorf("pack → expand (-want +got):\n%s", diff)
	}
}

func TestTail_feedsCompleteFramesOnly(t *testing.T) {
	for _, name := range []string{"basic/session.jsonl.zstd", "basic/session.jsonl"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtureDir, name))
			if err != nil {
				t.Fatal(err)
			}
			_, want, _ := basicLog()
			tail := dsh.NewTail(dsh.Detect(data), dsh.Limits{})
			var got []core.Event
			// Reveal the file a few bytes at a time, as a writer would.
			for size := 0; size <= len(data); size += 37 {
				evs, err := tail.Feed(data[tail.Offset():size])
				if err != nil {
					t.Fatalf("Feed at size %d: %v", size, err)
				}
				got = append(got, evs...)
			}
			evs, err := tail.Feed(data[tail.Offset():])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, evs...)
			if diff := cmp.Diff(eventLines(t, want), eventLines(t, got)); diff != "" {
				t.Errorf("tailed events (-want +got):\n%s", diff)
			}
			if tail.Offset() != int64(len(data)) {
				t.Errorf("Offset = %d, want %d", tail.Offset(), len(data))
			}
		})
	}
}

func TestTail_rejectsSeqGap(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join(fixtureDir, "bad/seq-gap.jsonl"))
	tail := dsh.NewTail(dsh.FormatJSONL, dsh.Limits{})
	evs, err := tail.Feed(data)
	if err == nil || !strings.Contains(err.Error(), "line 5: seq gap") {
		t.Fatalf("Feed error = %v, want a seq gap at line 5", err)
	}
	if len(evs) != 3 {
		t.Errorf("Feed returned %d events before the gap, want 3", len(evs))
	}
}

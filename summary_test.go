package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/backend"
	"prism/core"
	"prism/core/agent/agenttest"
	"prism/sources/dsh"
	"prism/web"
)

// sessionNumbers are what a page shows of a session's summary.
type sessionNumbers struct {
	Title, Status                string
	Calls, Errors, Events, Cards int
}

// TestSummaryTable: every session shows the same title, status and
// counters in the session list, in its page's header and in a recount of
// its `prism export` — one fold (core.Summary), computed by the store when
// the events were appended and by the page from the log — and the page has
// one card per counted call. Fixtures: the scripted demo, real dsh logs
// (plain, zstd, an export zip with a subagent) and a dsh log whose last
// turn was open, crash-repaired on import.
func TestSummaryTable(t *testing.T) {
	h, demo := agenttest.DemoLog(t, 1767225600000)
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, h, demo); err != nil {
		t.Fatal(err)
	}
	demoFile := filepath.Join(t.TempDir(), "demo.jsonl")
	if err := os.WriteFile(demoFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		titles     []string // of the sessions the file holds, in import order
	}{
		{"demo", demoFile, []string{agenttest.DemoPrompt}},
		{"dsh", "testdata/dsh/basic/session.jsonl", []string{"Count Go lines"}},
		{"dsh zstd", "testdata/dsh/basic/session.jsonl.zstd", []string{"Count Go lines"}},
		{"dsh export", "testdata/dsh/export/session-export.zip", nil},
		{"crash-repaired", "testdata/dsh/crashed/session.jsonl", []string{"Read go.mod, then run the tests."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dbPath := filepath.Join(t.TempDir(), "prism.db")
			var out, errOut bytes.Buffer
			if code := run(ctx, []string{"import", "--db", dbPath, tc.file}, &out, &errOut); code != 0 {
				t.Fatalf("prism import = %d: %s", code, errOut.String())
			}
			var ids []string // one line per session: ID, status, events
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if f := strings.Fields(line); len(f) > 0 {
					ids = append(ids, f[0])
				}
			}
			if len(ids) == 0 || tc.titles != nil && len(ids) != len(tc.titles) {
				t.Fatalf("imported %v, want %d sessions", ids, len(tc.titles))
			}
			if tc.name == "crash-repaired" && !strings.Contains(errOut.String(), "crash-repair") {
				t.Fatalf("the log was not crash-repaired on import: %s", errOut.String())
			}

			list, pages := serveNumbers(t, dbPath, ids)
			for i, id := range ids {
				var export bytes.Buffer
				if code := run(ctx, []string{"export", "--db", dbPath, id}, &export, &errOut); code != 0 {
					t.Fatalf("prism export %s = %d: %s", id, code, errOut.String())
				}
				recount := recountJSONL(t, export.Bytes())
				page := pages[id]
				row := list[id]
				row.Cards, recount.Cards = page.Cards, page.Cards // only the page shows cards
				recount.Title = page.Title                        // the title is checked below
				if row != page || recount != page {
					t.Errorf("session %s:\n list row %+v\n page     %+v\n export   %+v", id, row, page, recount)
				}
				if page.Cards != page.Calls {
					t.Errorf("session %s: %d cards beside %d calls", id, page.Cards, page.Calls)
				}
				if tc.titles != nil && page.Title != tc.titles[i] {
					t.Errorf("session %s: title %q, want %q", id, page.Title, tc.titles[i])
				}
			}
		})
	}
}

// serveNumbers serves the store at dbPath and reads each session's numbers
// from the session list and from its page.
func serveNumbers(t *testing.T, dbPath string, ids []string) (list, pages map[string]sessionNumbers) {
	t.Helper()
	log := quietLog()
	store, err := openStore(context.Background(), dbPath, dsh.Limits{}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg, err := backend.Presenters(log)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Sessions: backend.Source{Store: store}, Presenter: reg, Logger: log,
		Tuning: web.Tuning{Window: 1 << 20}}) // every card on the first paint
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(path string) *goquery.Document {
		res, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET %s = %d", path, res.StatusCode)
		}
		d, err := goquery.NewDocumentFromReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	num := func(s *goquery.Selection) int {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s.Text()), ",", ""))
		if err != nil {
			t.Fatalf("not a count: %q", s.Text())
		}
		return n
	}
	list, pages = map[string]sessionNumbers{}, map[string]sessionNumbers{}
	home := get("/")
	for _, id := range ids {
		row := home.Find(`[data-testid="session-row"][data-session-id="` + id + `"]`)
		if row.Length() != 1 {
			t.Fatalf("the list has %d rows for %s", row.Length(), id)
		}
		status, _ := row.Attr("data-status")
		list[id] = sessionNumbers{Title: strings.TrimSpace(row.Find("td.title a").Text()), Status: status,
			Calls: num(row.Find(`[data-testid="row-calls"]`)), Errors: num(row.Find(`[data-testid="row-errors"]`)),
			Events: num(row.Find(`[data-testid="row-events"]`))}
		page := get("/sessions/" + id)
		head := page.Find(`[data-testid="session-head"]`)
		status, _ = head.Find(`[data-testid="session-status"]`).Attr("data-status")
		lastSeq, _ := head.Find(`[data-testid="session-status"]`).Attr("data-last-seq")
		events, _ := strconv.Atoi(lastSeq)
		pages[id] = sessionNumbers{Title: strings.TrimSpace(head.Find("h1").Text()), Status: status,
			Calls: num(head.Find(`[data-testid="stat-calls"]`)), Errors: num(head.Find(`[data-testid="stat-errors"]`)),
			Events: events + 1, Cards: page.Find(`[data-testid="tool-card"]`).Length()}
	}
	return list, pages
}

// recountJSONL counts an exported log by hand, by the rules the summary
// documents: a call per tool/call and per crash-repair result for a call
// never logged (TOOL_NOT_STARTED); an error per append-origin tool/result
// whose tool-result block has isError; the status of the last turn
// boundary (ended for a one-shot subagent).
func recountJSONL(t *testing.T, jsonl []byte) sessionNumbers {
	t.Helper()
	var n sessionNumbers
	n.Status = core.StatusIdle
	oneShot := false
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(nil, 64<<20)
	sc.Scan() // the header line
	for sc.Scan() {
		var e struct {
			Type      string          `json:"type"`
			SurfaceOp json.RawMessage `json:"surfaceOp"`
			Data      struct {
				Reason  json.RawMessage `json:"reason"`
				Mode    string          `json:"mode"`
				Message struct {
					Content []struct {
						IsError bool `json:"isError"`
					} `json:"content"`
				} `json:"message"`
				Error *struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line: %v", err)
		}
		n.Events++
		switch e.Type {
		case "tool/call":
			n.Calls++
		case "tool/result":
			if string(e.SurfaceOp) != `"append"` {
				break
			}
			if len(e.Data.Message.Content) == 1 && e.Data.Message.Content[0].IsError {
				n.Errors++
			}
			if e.Data.Error != nil && e.Data.Error.Code == "TOOL_NOT_STARTED" {
				n.Calls++
			}
		case "turn/start":
			n.Status = core.StatusRunning
		case "subagent/descriptor":
			oneShot = oneShot || e.Data.Mode == "one-shot"
		case "turn/end":
			switch {
			case strings.Contains(string(e.Data.Reason), `"kind":"interrupted"`):
				n.Status = core.StatusInterrupted
			case oneShot:
				n.Status = core.StatusEnded
			default:
				n.Status = core.StatusIdle
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

package views

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"

	"prism/core"
	"prism/core/notes"
)

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Error"
}

func turnStatus(t *TurnRow) string {
	if !t.Ended {
		return "running"
	}
	switch t.End.Kind {
	case core.TurnCompleted:
		return "ok"
	case core.TurnInterrupted, core.TurnAborted, "unclosed":
		return "stopped"
	case core.TurnError:
		return "error"
	}
	return "ended"
}

func turnLabel(t *TurnRow) string {
	if !t.Ended {
		return "running"
	}
	if t.End.Kind == "" {
		return "ended"
	}
	return clean(t.End.Kind)
}

// turnMessage is the divider's text of turn t as r shows it: why crash
// repair closed it comes from the session's "repair" note on its turn/end
// (notes.KindRepair), or from the reason an older prism wrote into the
// turn/end itself.
func turnMessage(t *TurnRow, r R) string {
	if t.Ended && t.End.Kind == core.TurnInterrupted {
		if why, ok := notes.RepairReason(r.Notes, t.EndSeq, r.Seq); ok {
			if why.Reason == "" {
				why.Reason = strings.ReplaceAll(why.Kind, "-", " ")
			}
			return firstLine(clean("closed by crash repair: "+why.Reason), 200)
		}
	}
	switch {
	case !t.Ended:
		return ""
	case t.End.Error != nil:
		return firstLine(clean(t.End.Error.Code+": "+t.End.Error.Message), 200)
	case t.End.Kind == core.TurnInterrupted && t.End.Reason != nil && t.End.Reason.Reason != "":
		// Closed by an older prism that wrote why into the log.
		return firstLine(clean("closed by crash repair: "+t.End.Reason.Reason), 200)
	case t.End.Reason != nil:
		return firstLine(clean(t.End.Reason.Kind+" "+t.End.Reason.Reason), 200)
	case t.End.Kind == core.TurnInterrupted:
		return "closed by crash repair"
	case t.End.Kind == "unclosed":
		return "a new turn started before this one ended"
	}
	return ""
}

func sourceNote(s core.Source) string {
	parts := []string{}
	if s.Plugin != "" {
		parts = append(parts, s.Plugin)
	}
	if s.Form != "" {
		parts = append(parts, s.Form)
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + clean(strings.Join(parts, " · "))
}

// shownBlock is one rendered block of a message.
type shownBlock struct {
	Kind  string // text | markdown | reasoning | other
	Text  string
	Lines int
}

func blocksOf(c core.Content) []shownBlock {
	var out []shownBlock
	for _, b := range c {
		switch x := b.(type) {
		case *core.TextBlock:
			t, _ := capBytes(clean(x.Text), maxTextBytes)
			out = append(out, shownBlock{Kind: "text", Text: t})
		case *core.ImageBlock:
			out = append(out, shownBlock{Kind: "other", Text: clean("image " + x.Attachment.Name + " " + x.Attachment.MediaType)})
		default:
			raw, _ := json.MarshalIndent(b, "", "  ")
			t, _ := capBytes(clean(string(raw)), 16<<10)
			out = append(out, shownBlock{Kind: "other", Text: t})
		}
	}
	return out
}

func assistantBlocks(a *assistantItem) []shownBlock {
	out := make([]shownBlock, 0, len(a.Blocks))
	for _, b := range a.Blocks {
		switch b.Kind {
		case "reasoning":
			t, _ := capBytes(clean(b.Text), maxTextBytes)
			out = append(out, shownBlock{Kind: "reasoning", Text: t, Lines: strings.Count(t, "\n") + 1})
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
			if a.Final {
				out = append(out, shownBlock{Kind: "markdown", Text: markdown(b.Text)})
			} else {
				t, _ := capBytes(clean(b.Text), maxTextBytes)
				out = append(out, shownBlock{Kind: "text", Text: t})
			}
		default:
			t, _ := capBytes(clean(b.Text), 16<<10)
			out = append(out, shownBlock{Kind: "other", Text: t})
		}
	}
	return out
}

func rawType(x *RawItem) string { return firstLine(clean(x.Event.Type), 120) }

// rawBrief is a one-line description of a raw row.
func rawBrief(x *RawItem) string {
	if x.Note != "" {
		return firstLine(clean(x.Note), 200)
	}
	switch x.Kind {
	case "replacement":
		return "model-only rewrite; the transcript keeps the original"
	case "unknown":
		if x.Event.Ignorable {
			return "unknown event type (ignorable)"
		}
		return "unknown event type"
	}
	d := x.Event.Data
	if len(d) > 160 {
		d = d[:160]
	}
	return firstLine(clean(string(d)), 120)
}

func rawClip(x *RawItem) Clip {
	data := x.Event.Data
	if len(data) > 64<<10 {
		s, _ := capBytes(string(data), 64<<10)
		return newClip(s+"\n… cut at 64 KB", 200)
	}
	return newClip(prettyJSON(string(data)), 200)
}

// awaitingLabel counts approvals waiting for a person.
func awaitingLabel(n int64) string {
	if n == 1 {
		return "awaiting approval"
	}
	return Count(int(n)) + " awaiting approval"
}

// approvalVerdict is a decided approval's headline: "Approved by the
// owner", "Rejected", "Approval cancelled".
func approvalVerdict(a *ApprovalView) string {
	l := approvalLabel(a.State)
	l = strings.ToUpper(l[:1]) + l[1:]
	if a.By != "" {
		l += " by " + a.By
	}
	return l
}

// approvalLabel names an approval state: awaiting, or an outcome.
func approvalLabel(a string) string {
	switch a {
	case StateAwaiting:
		return "awaiting approval"
	case string(core.ApprovalAllowedOnce):
		return "approved"
	case string(core.ApprovalRejected):
		return "rejected"
	case string(core.ApprovalCancelled):
		return "approval cancelled"
	case string(core.ApprovalUnavailable):
		return "approval unavailable"
	}
	return "approval " + a
}

func diffClass(op byte) string {
	switch op {
	case '+':
		return "add"
	case '-':
		return "del"
	}
	return "ctx"
}

func lineNo(n int) string {
	if n <= 0 {
		return ""
	}
	return Count(n)
}

func baseName(p string) string {
	if p == "" {
		return ""
	}
	return path.Base(p)
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func contentNote(v *CallPageView) string {
	switch {
	case !v.HasResult:
		return "no result yet"
	case v.IsError:
		return "isError: true"
	}
	return ""
}

// metaTypes names the event types of a step's metadata row, in order,
// each once ("request/header, request/context").
func metaTypes(meta []*RawItem) string {
	var types []string
	seen := map[string]bool{}
	for _, x := range meta {
		if t := rawType(x); !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	return strings.Join(types, ", ")
}

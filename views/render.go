package views

import (
	"context"
	"slices"
	"strings"

	"github.com/a-h/templ"
)

// NodeComponent returns the component that renders a patchable node.
func NodeComponent(r R, n Node) templ.Component {
	switch x := n.(type) {
	case stepHead:
		return stepHeadView(x.Step, r.Prices)
	case *TurnRow:
		return turnRowView(x, r)
	case *Step:
		return stepView(r, x)
	case *row:
		return itemView(r, x.Item)
	case *EarlierView:
		return Earlier(x)
	case Item:
		return itemView(r, x)
	}
	return templ.NopComponent
}

// Render renders a component to a string.
func Render(ctx context.Context, c templ.Component) (string, error) {
	var b strings.Builder
	if err := c.Render(ctx, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Patch is one datastar-patch-elements message.
type Patch struct {
	// Selector is the container of an append or prepend, the element a
	// remove removes; "" for a morph.
	Selector string
	// Mode is "outer" (morph each top-level element onto the element with
	// its id), "append", "prepend" or "remove" (HTML empty).
	Mode string
	HTML string
}

// RenderUpdate renders what u changed in t as patches: first one morph of
// every changed node (and the session header), then the appends, grouped by
// container. Morphs are idempotent and appends come last, so a client that
// lost the tail of a group can safely be sent the whole group again.
func RenderUpdate(ctx context.Context, t *Timeline, u Update) ([]Patch, error) {
	return RenderUpdateFor(ctx, t, SessionLinks(t.Header().ID), u)
}

// RenderUpdateFor is RenderUpdate for a reader following l (a share link's
// stream renders with its own links).
func RenderUpdateFor(ctx context.Context, t *Timeline, l Links, u Update) ([]Patch, error) {
	r := NewR(t, l)
	var out []Patch
	if len(u.Morphs) > 0 || u.Header {
		var b strings.Builder
		for _, n := range u.Morphs {
			if err := NodeComponent(r, n).Render(ctx, &b); err != nil {
				return nil, err
			}
			b.WriteByte('\n')
		}
		if u.Header {
			head := newSessionHeadFor(t, l)
			if err := sessionStatus(&head).Render(ctx, &b); err != nil {
				return nil, err
			}
			b.WriteByte('\n')
			if err := sessionStats(&head).Render(ctx, &b); err != nil {
				return nil, err
			}
		}
		out = append(out, Patch{Mode: "outer", HTML: strings.TrimSuffix(b.String(), "\n")})
	}
	for i := 0; i < len(u.Appends); {
		parent := u.Appends[i].Parent
		var b strings.Builder
		for ; i < len(u.Appends) && u.Appends[i].Parent == parent; i++ {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			if err := NodeComponent(r, u.Appends[i].Node).Render(ctx, &b); err != nil {
				return nil, err
			}
		}
		out = append(out, Patch{Selector: "#" + parent, Mode: "append", HTML: b.String()})
	}
	return out, nil
}

// RenderPage renders what a fold determines on the session page — the
// header and the transcript window — as one outer morph: the patch that
// brings a page whose session log was replaced to the new log.
func RenderPage(ctx context.Context, t *Timeline, window int) ([]Patch, error) {
	return RenderPageFor(ctx, t, SessionLinks(t.Header().ID), window)
}

// RenderPageFor is RenderPage for a reader following l.
func RenderPageFor(ctx context.Context, t *Timeline, l Links, window int) ([]Patch, error) {
	v := newSessionPageFor(PageMeta{}, t, l, window, false)
	var b strings.Builder
	if err := SessionHead(&v.Head).Render(ctx, &b); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	if err := Transcript(v).Render(ctx, &b); err != nil {
		return nil, err
	}
	return []Patch{{Mode: "outer", HTML: b.String()}}, nil
}

// RenderCallCardsFor renders the cards of calls as t has them now, as one
// outer morph (ok false when none of them has a card): what a page needs
// when only a call's labels changed.
func RenderCallCardsFor(ctx context.Context, t *Timeline, l Links, calls []string) (p Patch, ok bool, err error) {
	r := NewR(t, l)
	var b strings.Builder
	for _, call := range calls {
		for _, c := range t.CardsByCallID(call) {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			if err := CardComponent(NewCardViewIn(c, r)).Render(ctx, &b); err != nil {
				return Patch{}, false, err
			}
		}
	}
	if b.Len() == 0 {
		return Patch{}, false, nil
	}
	return Patch{Mode: "outer", HTML: b.String()}, true, nil
}

// RenderTurnEndsFor renders, as t's reader sees them, the dividers of the
// turns whose turn/end has one of the seqs ends (a "repair" note on it
// changed what the divider says); ok false when none is in the fold.
func RenderTurnEndsFor(ctx context.Context, t *Timeline, l Links, ends []int64) (p Patch, ok bool, err error) {
	r := NewR(t, l)
	var b strings.Builder
	for _, s := range t.Segments() {
		row, isTurn := s.(*TurnRow)
		if !isTurn || !row.Ended || !slices.Contains(ends, row.EndSeq) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if err := turnRowView(row, r).Render(ctx, &b); err != nil {
			return Patch{}, false, err
		}
	}
	if b.Len() == 0 {
		return Patch{}, false, nil
	}
	return Patch{Mode: "outer", HTML: b.String()}, true, nil
}

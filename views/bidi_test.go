package views_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// invisibles are the characters a browser would obey or hide: every bidi
// control (the Trojan Source class, CVE-2021-42574) and the zero-width and
// other invisible characters. Listed here independently of the code under
// test.
var invisibles = []rune{
	0x00AD, 0x061C, 0x180E,
	0x200B, 0x200C, 0x200D, 0x200E, 0x200F,
	0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
	0x2060, 0x2061, 0x2062, 0x2063, 0x2064,
	0x2066, 0x2067, 0x2068, 0x2069,
	0xFEFF,
}

// trojan is the text of the issue: an RTL override that would display
// "RTL-override" reversed, then every other invisible character.
func trojan() string {
	var b strings.Builder
	b.WriteString("RTL-\u202Eoverride\u202C end\n")
	for _, r := range invisibles {
		fmt.Fprintf(&b, "a%cb\n", r)
	}
	return b.String()
}

// TestInvisibleCharacters_ShownAsMarkers renders cards whose tool output
// (a command's output, a file's lines, grep matches, a diff and a title)
// carries each invisible character: none reaches the page, each shows as a
// styled marker that names it.
func TestInvisibleCharacters_ShownAsMarkers(t *testing.T) {
	ctx := context.Background()
	ws := cardWorkspace(t)
	body := trojan()
	if err := os.WriteFile(filepath.Join(ws, "evil.txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := toolRegistry(t, ws)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	b.Exec(ctx, reg, ws, "term", "bash", `{"command":"cat evil.txt","description":"show \u202Eit"}`)
	b.Exec(ctx, reg, ws, "read", "read", `{"file_path":"evil.txt"}`)
	b.Exec(ctx, reg, ws, "grep", "grep", `{"pattern":"RTL|a.+b","path":"evil.txt"}`)
	b.Exec(ctx, reg, ws, "edit", "edit", `{"file_path":"evil.txt","old_string":"RTL-\u202Eoverride","new_string":"LTR-\u202Dfixed"}`)
	b.Call("note", "note", `{"title":"RTL-\u202Eoverride"}`).Result("note", body, false, nil, nil)
	tl := views.Fold(hdr(), b.Events, presenters(t))

	for _, id := range []string{"term", "read", "grep", "edit", "note"} {
		t.Run(id, func(t *testing.T) {
			html := renderCard(t, tl, ws, id)
			golden(t, "views/cards", "invisible-"+id, html)
			for _, r := range invisibles {
				if strings.ContainsRune(html, r) {
					t.Errorf("the card carries U+%04X itself", r)
				}
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
			if err != nil {
				t.Fatal(err)
			}
			text := doc.Text()
			if !strings.Contains(text, "RTL-<U+202E>override") {
				t.Errorf("the RTL override is not shown as a marker in %q", text)
			}
			marks := doc.Find("span.ctl")
			if marks.Length() == 0 {
				t.Fatal("no styled marker")
			}
			title, _ := marks.First().Attr("title")
			if !strings.HasPrefix(title, "U+202E RIGHT-TO-LEFT OVERRIDE") {
				t.Errorf("first marker's title = %q", title)
			}
			if id != "edit" {
				for _, r := range invisibles {
					if m := fmt.Sprintf("a<U+%04X>b", r); !strings.Contains(text, m) {
						t.Errorf("the card does not show %s", m)
					}
				}
			}
		})
	}
}

// TestInvisibleCharacters_EverywhereOnThePage: the session page (messages,
// markdown, titles, attributes) carries none of them either.
func TestInvisibleCharacters_EverywhereOnThePage(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User(trojan())
	b.Assistant("# " + trojan())
	b.Call("c\u202E1", "note", `{"title":"x"}`).Result("c\u202E1", trojan(), true, nil, &core.ErrorInfo{Name: "E\u202E", Code: "C\u200B"})
	b.StepEnd().TurnEnd(core.TurnCompleted)
	tl := views.Fold(core.SessionHeader{ID: "s\u202E1", CreatedAt: t0, Cwd: "/w\u2066"}, b.Events, presenters(t))
	page, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 100, true)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range invisibles {
		if strings.ContainsRune(page, r) {
			t.Errorf("the page carries U+%04X", r)
		}
	}
	if !strings.Contains(page, "RTL-&lt;U+202E&gt;override") {
		t.Error("the user message does not show the marker")
	}
}

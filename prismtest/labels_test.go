package prismtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"prism/prismtest"
)

// TestServerLabels: the server NewServer runs keeps notes, so a label
// added through the API is on the call's card.
func TestServerLabels(t *testing.T) {
	srv := prismtest.NewServer(t, prismtest.Options{Tools: greetRegistry(),
		Script: prismtest.NewScript().Step("", prismtest.Call("greet", `{"name":"Ada"}`)).Final("Greeted.")})
	id := srv.Start("Greet Ada.")
	srv.Wait(id)
	res, err := srv.Client().Post(srv.URL+"/api/sessions/"+id+"/annotations", "application/json",
		strings.NewReader(`{"callId":"call_1","label":"wrong","note":"too formal"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %s: %s", res.Status, body)
	}
	card := srv.Page(id).Find(prismtest.CardSelector("call_1"))
	if card.Find(`[data-label="wrong"]`).Length() == 0 || !strings.Contains(card.Text(), "too formal") {
		t.Errorf("the card of call_1 does not show the label:\n%s", card.Text())
	}
}

package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"prism/views"
)

// TestURLsReachTheirRoutes: every URL views builds — for ids with spaces,
// slashes, quotes and non-ASCII too — is routed to the route it is built
// for, with its parameters intact.
func TestURLsReachTheirRoutes(t *testing.T) {
	s := New(Deps{Sessions: &logSource{}, Presenter: genericPresenter{}})
	defer s.Close()
	for _, id := range []string{"s1", `a b/ü "q"?#`} {
		for _, tc := range []struct {
			method, url, route string
			params             map[string]string
		}{
			{http.MethodGet, views.HomeURL(""), views.RouteHome, nil},
			{http.MethodGet, views.HomeURL(id), views.RouteHome, nil},
			{http.MethodGet, views.ListStreamURL(id), views.RouteListStream, nil},
			{http.MethodGet, views.SessionURL(id), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionSharedURL(id, "k"), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionAtURL(id, 7), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionCallURL(id, id+"-call", ""), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionCallURL(id, id+"-call", "card-2"), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionEventURL(id, 7), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.Place{At: 3, Card: "call-x__2", Event: -1}.URL(id), views.RouteSession, map[string]string{"id": id}},
			{http.MethodGet, views.SessionStreamURL(id, 7), views.RouteSessionStream, map[string]string{"id": id}},
			{http.MethodGet, views.EarlierURL(id, 7), views.RouteEarlier, map[string]string{"id": id}},
			{http.MethodGet, views.CallURL(id, id+"-call", "card-2"), views.RouteCall, map[string]string{"id": id, "callId": id + "-call"}},
			{http.MethodGet, views.CallTestURL(id, id+"-call", "card-2"), views.RouteCallTest, map[string]string{"id": id, "callId": id + "-call"}},
			{http.MethodPost, views.StartURL(), views.RouteStart, nil},
			{http.MethodPost, views.MessagesURL(id), views.RouteMessages, map[string]string{"id": id}},
			{http.MethodPost, views.CancelURL(id), views.RouteCancel, map[string]string{"id": id}},
			{http.MethodPost, views.ForksURL(id), views.RouteForks, map[string]string{"id": id}},
			{http.MethodGet, views.ForksURL(id), views.RouteForks, map[string]string{"id": id}},
			{http.MethodPost, views.APIForksURL(id), views.RouteAPIForks, map[string]string{"id": id}},
			{http.MethodGet, views.ExportURL(id), views.RouteExport, map[string]string{"id": id}},
			{http.MethodGet, views.StaticURL("app.css", "v1"), views.RouteStatic, nil},
			{http.MethodPost, views.ApprovalURL(id, id+"/ap"), views.RouteApproval, map[string]string{"id": id, "approvalId": id + "/ap"}},
			{http.MethodGet, views.APIApprovalsURL(), views.RouteAPIApprovals, nil},
			{http.MethodGet, views.RulesURL(), views.RouteRules, nil},
			{http.MethodGet, views.BoardURL(), views.RouteBoard, nil},
			{http.MethodGet, views.BoardStreamURL(), views.RouteBoardStream, nil},
			{http.MethodGet, views.APIAttentionURL(), views.RouteAPIAttention, nil},
			{http.MethodGet, views.AttentionListURL(), views.RouteHome, nil},
			{http.MethodPost, views.AttentionAckURL(id), views.RouteAPIAttentionAck, map[string]string{"id": id}},
			{http.MethodPost, views.APIApprovalURL(id, id+"/ap"), views.RouteAPIApproval, map[string]string{"id": id, "approvalId": id + "/ap"}},
			{http.MethodPost, views.APIPolicyURL(id), views.RouteAPIPolicy, map[string]string{"id": id}},
			{http.MethodPost, views.LabelsURL(id), views.RouteLabels, map[string]string{"id": id}},
			{http.MethodPost, views.LabelURL(id, id+"/n"), views.RouteLabel, map[string]string{"id": id, "noteId": id + "/n"}},
			{http.MethodGet, views.APINotesURL(id, "label"), views.RouteAPINotes, map[string]string{"id": id}},
			{http.MethodPut, views.APINoteURL(id, id+"/n"), views.RouteAPINote, map[string]string{"id": id, "noteId": id + "/n"}},
			{http.MethodPost, views.APIAnnotationsURL(id), views.RouteAPIAnnotations, map[string]string{"id": id}},
			{http.MethodDelete, views.APIAnnotationURL(id, id+"/n"), views.RouteAPIAnnotation, map[string]string{"id": id, "noteId": id + "/n"}},
			{http.MethodGet, views.SearchURL(id, "time", "c1"), views.RouteSearch, nil},
			{http.MethodGet, views.CompareURL(id, id+"-b"), views.RouteCompare, map[string]string{"a": id, "b": id + "-b"}},
			{http.MethodGet, views.CompareStreamURL(id, id+"-b"), views.RouteCompareStream, map[string]string{"a": id, "b": id + "-b"}},
			{http.MethodGet, views.ComparePickURL(id), views.RouteComparePick, nil},
			{http.MethodGet, views.APICompareURL(id, id+"-b"), views.RouteAPICompare, map[string]string{"a": id, "b": id + "-b"}},
			{http.MethodGet, views.SourcesURL(), views.RouteSources, nil},
			{http.MethodGet, views.APISearchURL(id, "rank", "c1", 5), views.RouteAPISearch, nil},
			{http.MethodGet, views.ListURL(views.ListFilter{Query: id, Status: "idle", HasErrors: true, Sort: "calls"}), views.RouteHome, nil},
			{http.MethodGet, views.ListFilterStreamURL(views.ListFilter{Query: id, Sort: "errors"}), views.RouteListStream, nil},
			{http.MethodPost, views.OTLPTracesURL(), views.RouteOTLPTraces, nil},
		} {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatalf("%s: %v", tc.url, err)
			}
			req := httptest.NewRequest(tc.method, tc.url, nil)
			c := s.e.NewContext(req, httptest.NewRecorder())
			path := u.RawPath
			if path == "" {
				path = u.Path
			}
			s.e.Router().Find(tc.method, path, c)
			if c.Path() != tc.route {
				t.Errorf("%s %s routes to %q, want %q", tc.method, tc.url, c.Path(), tc.route)
				continue
			}
			for name, want := range tc.params {
				if got, err := param(c, name); err != nil || got != want {
					t.Errorf("%s: param %s = %q (%v), want %q", tc.url, name, got, err, want)
				}
			}
		}
	}
	if got := views.CardURL("a b", "call-x"); got != "/sessions/a%20b#call-x" {
		t.Errorf("CardURL = %q", got)
	}
	// The page's query parameters survive the trip, whatever the call id.
	for _, tc := range []struct {
		url  string
		want url.Values
	}{
		{views.SessionAtURL("s", 0), url.Values{views.ParamAt: {"0"}}},
		{views.SessionEventURL("s", 12), url.Values{views.ParamEvent: {"12"}}},
		{views.SessionCallURL("s", `c&d=#?/ü`, ""), url.Values{views.ParamCall: {`c&d=#?/ü`}}},
		{views.SessionCallURL("s", "c", "call-c__2"), url.Values{views.ParamCall: {"c"}, views.ParamCard: {"call-c__2"}}},
		{views.Place{At: 5, Card: "call-x", Event: -1}.URL("s"), url.Values{views.ParamAt: {"5"}, views.ParamCard: {"call-x"}}},
		{views.LivePlace().URL("s"), url.Values{}},
		{views.SearchURL(`"rm -rf" tool:bash`, "time", "abc"), url.Values{"q": {`"rm -rf" tool:bash`}, views.ParamOrder: {"time"}, views.ParamCursor: {"abc"}}},
		{views.APISearchURL("x&y", "", "", 5), url.Values{"q": {"x&y"}, views.ParamLimit: {"5"}}},
		{views.ListURL(views.ListFilter{Query: "a&b", Status: "running", HasErrors: true, Sort: "created"}), url.Values{views.ParamQuery: {"a&b"}, views.ParamStatus: {"running"}, views.ParamHasErrors: {"1"}, views.ParamSort: {"created"}}},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Query(); got.Encode() != tc.want.Encode() {
			t.Errorf("%s: query %v, want %v", tc.url, got, tc.want)
		}
	}
}

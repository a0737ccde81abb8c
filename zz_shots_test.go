package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

type ownAll struct{ webRunner }

func (ownAll) Owns(id string) bool { return id != "elsewhere" }

type noApprovals struct{ web.Approvals }

func TestZZShots(t *testing.T) {
	dir := os.Getenv("SHOTS")
	if dir == "" {
		t.Skip()
	}
	log := quietLog()
	store, feed := openTestStore(t, log)
	reg, _ := backend.Presenters(log)
	const t0 = 1767225600000
	bash := func(cmd, d string) string { return `{"command":"` + cmd + `","description":"` + d + `"}` }
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("Clean the build and publish the motd")
	b.Assistant("I'll check the notes, clean the build and update the message of the day.", [3]string{"n1", "note", `{"title":"Release plan"}`}, [3]string{"b1", "bash", bash("rm -rf build/ dist/", "Remove build output")}, [3]string{"w1", "write", `{"file_path":"/etc/motd","content":"Welcome aboard\n"}`})
	b.Call("n1", "note", `{"title":"Release plan"}`).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "note", CallID: "n1", Reason: "note calls need approval"}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalAllowedOnce, By: "tab k3j2d9x1 (Chrome at 127.0.0.1)"}, nil)
	b.Result("n1", "# Release plan", false, nil, nil)
	b.Call("b1", "bash", bash("rm -rf build/ dist/", "Remove build output")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a2", ToolName: "bash", CallID: "b1", Reason: `command matches "^rm "`}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a2", Outcome: core.ApprovalRejected, By: "tab k3j2d9x1 (Chrome at 127.0.0.1)", Note: "dist/ holds the signed artifacts — use make clean instead"}, nil)
	b.Result("b1", `Error: the user rejected tool "bash": dist/ holds the signed artifacts — use make clean instead`, true, nil, nil)
	b.Call("w1", "write", `{"file_path":"/etc/motd","content":"Welcome aboard\n"}`).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a3", ToolName: "write", CallID: "w1", Reason: `file_path does not match "^src/"`}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a3", Outcome: core.ApprovalCancelled, Reason: "nobody decided within 5m0s"}, nil)
	b.Result("w1", `Error: approval for tool "write" was cancelled: nobody decided within 5m0s`, true, nil, nil)
	b.StepEnd().StepStart()
	b.Assistant("Then `make clean`.", [3]string{"b2", "bash", bash("rm -rf build/ && make clean", "Clean with make")})
	b.Call("b2", "bash", bash("rm -rf build/ \u0026\u0026 make clean", "Clean with make")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a4", ToolName: "bash", CallID: "b2", Reason: `bash calls need approval; command matches "^rm "`}, nil)
	ctx := context.Background()
	for _, id := range []string{"approvals", "elsewhere"} {
		if err := store.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: t0, Cwd: "/work/lighthouse"}); err != nil {
			t.Fatal(err)
		}
		if err := store.AppendEvents(ctx, id, b.Events); err != nil {
			t.Fatal(err)
		}
	}
	r := coretest.NewBuilder(t0)
	r.TurnStart().StepStart().User("Deploy")
	r.Assistant("", [3]string{"d1", "bash", bash("./deploy.sh prod", "Deploy")})
	r.Call("d1", "bash", bash("./deploy.sh prod", "Deploy")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a9", ToolName: "bash", CallID: "d1", Reason: "bash calls need approval"}, nil)
	r.Repair()
	store.CreateSession(ctx, core.SessionHeader{ID: "repaired", CreatedAt: t0, Cwd: "/work"})
	store.AppendEvents(ctx, "repaired", r.Events)

	srv := web.New(web.Deps{Sessions: backend.Source{Store: store}, Commits: feed, Runner: ownAll{}, Approvals: noApprovals{}, Presenter: reg, Logger: log})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()

	for _, theme := range []string{"light", "dark"} {
		for _, w := range []int64{1280, 390} {
			actx, c1 := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
			bctx, c2 := chromedp.NewContext(actx)
			bctx, c3 := context.WithTimeout(bctx, 60*time.Second)
			if _, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}}); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(bctx, chromedp.EmulateViewport(w, 900)); err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct{ name, path, wait string }{
				{"session", "/sessions/approvals", `[data-call-id="b2"][data-state="awaiting"]`},
				{"readonly", "/sessions/elsewhere", `[data-call-id="b2"][data-state="awaiting"]`},
				{"repaired", "/sessions/repaired", `[data-call-id="d1"]`},
				{"list", "/", `[data-testid="awaiting-badge"]`},
			} {
				if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+p.path), chromedp.WaitReady(chromedp.CSS(p.wait))); err != nil {
					t.Fatal(err)
				}
				if p.name == "session" {
					// the notice a refused decision shows
					chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById('notice').outerHTML = '<div id="notice" class="notice-bar warn" role="status"><span class="notice-text">Already decided: approved by tab k3j2d9x1 (Chrome at 127.0.0.1) at 14:02:11 UTC.</span> <button type="button" class="notice-close">×</button></div>'; true`))
				}
				shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, p.name+"-"+theme+"-"+itoa(w)+".png"), shot, 0o644)
			}
			c3()
			c2()
			c1()
		}
	}
}

func itoa(n int64) string {
	if n == 1280 {
		return "1280"
	}
	return "390"
}

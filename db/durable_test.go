package db

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"prism/store/storetest"
)

// TestIdleWriterFilesTheLag: appends that come back to back leave the
// search index's lag alone — a session's next commit does not wait for
// the index — and the writer files it once it has idled indexLagIdle, in
// transactions of at most indexIdleChunk events, one after another while
// it stays idle, that leave the connection at synchronous=FULL for the
// appends that follow.
func TestIdleWriterFilesTheLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, err := Open(ctx, filepath.Join(t.TempDir(), "idle.db"), Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		storetest.MustCreate(t, st, "s")
		const turns = 40 // 320 events: more than one idle transaction's
		for i := range turns {
			if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(int64(i*8), i+1, false)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the writer waits for a request or its idle timer
		if w := watermarks(t, st.rdb)["s"]; w[0] >= w[1] {
			t.Fatalf("watermark %d of last seq %d: the lag was filed between back-to-back appends", w[0], w[1])
		}
		time.Sleep(indexLagIdle + time.Millisecond)
		synctest.Wait()
		if w := watermarks(t, st.rdb)["s"]; w[0] != w[1] || w[1] != turns*8-1 {
			t.Fatalf("watermark %d of last seq %d after the writer idled: want both %d", w[0], w[1], turns*8-1)
		}
		var sync int
		if err := st.write(ctx, func(t *wtx) error { return t.tx.QueryRow("PRAGMA synchronous").Scan(&sync) }); err != nil {
			t.Fatal(err)
		}
		if sync != 2 {
			t.Fatalf("synchronous = %d after an index transaction, want 2 (FULL)", sync)
		}
	})
}

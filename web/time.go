package web

import "time"

// stamp formats epoch ms for the list: "2006-01-02 15:04" UTC and RFC 3339.
func stamp(ms int64) (string, string) {
	if ms <= 0 {
		return "", ""
	}
	t := time.UnixMilli(ms).UTC()
	return t.Format("2006-01-02 15:04"), t.Format(time.RFC3339)
}

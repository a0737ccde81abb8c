package store

// OwnerLogin is one stored owner login, as prism migrate copies it: the
// SHA-256 hash of its cookie's id and its expiry (epoch milliseconds).
type OwnerLogin struct {
	IDHash    [32]byte
	ExpiresAt int64
}

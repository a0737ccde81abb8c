package backend_test

import (
	"prism/backend"
	"prism/pgstore"
)

// The PostgreSQL store is the one several nodes share: prism serve wraps
// its runner in NewClusterRunner when the store is a Cluster.
var _ backend.Cluster = (*pgstore.Store)(nil)

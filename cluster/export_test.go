package cluster

import "blis/router"

// NewRoundRobinForTest is the round-robin test router, for the external
// benchmarks.
func NewRoundRobinForTest() router.Router { return &roundRobin{} }

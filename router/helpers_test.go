package router

import "strconv"

func testEndpoints(n int) []Endpoint {
	eps := make([]Endpoint, n)
	for i := range eps {
		eps[i] = Endpoint{Name: "pool-" + strconv.Itoa(i), Pool: "pool", BlockSize: 16, KVBlocks: 1000, MaxNumSeqs: 256}
	}
	return eps
}

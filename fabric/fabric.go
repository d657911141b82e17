// Package fabric simulates data moving between GPUs over a deployment's
// network (catalog.Fabric): KV-cache transfers between a prefill and a
// decode replica, each crossing NVLink inside a node, or the GPUs' NICs
// (RDMA, RoCE, TCP) between nodes, sharing those links with every other
// transfer in flight. The model is in README.md.
package fabric

import (
	"fmt"
	"math"
	"time"

	"blis/catalog"
)

// Place is where one replica's GPUs are: its node and the first of its
// GPUs on that node (a replica wider than a node spans the next ones).
// GPUs below 1 is read as 1.
type Place struct {
	Node, GPU, GPUs int
}

// Transfers is every transfer in flight on one fabric. The loop starts a
// transfer, asks when the next one completes, and collects the completed
// ones. Each transfer is one flow per pair of matching TP ranks; the flows
// share every link max-min fairly, recomputed whenever a flow starts or
// ends (exact and event-driven: no time steps).
type Transfers struct {
	f      *catalog.Fabric
	perNIC int
	lat    [nKinds]time.Duration

	now      time.Duration // time the flows' remaining bytes were last settled
	links    []link
	linkIdx  map[uint64]int32
	flows    []flow
	freeFlow []int32
	active   []int32 // in-flight flows (indices into flows)
	xfers    []xfer
	freeXfer []int32
	byKind   [nKinds]int // in-flight transfers by latency kind

	nextFlow time.Duration // earliest finish of an in-flight flow
	done     doneHeap      // transfers whose last flow has finished
	heap     []int32       // progressive filling's links, smallest share first
	stamp    uint32        // progressive filling's current round
	dirty    bool          // flows started or ended since the last reshare
}

// The kinds of link a flow crosses; a transfer pays its slowest kind's
// latency once.
const (
	kindNVLink = iota
	kindPCIe
	kindNetwork
	nKinds
)

type link struct {
	cap   float64 // bytes per second
	flows []int32 // in-flight flows crossing it
	// progressive filling's state: capacity not yet given to fixed flows
	// and how many of its flows are still unfixed.
	rem   float64
	left  int32
	share float64 // rem / left
	hpos  int32   // index in Transfers.heap
	stamp uint32
}

type flow struct {
	xfer   int32
	links  [2]int32 // -1: none
	pos    [2]int32 // index in each link's flows
	at     int32    // index in active
	rem    float64  // bytes left at Transfers.now
	rate   float64  // bytes per second
	finish time.Duration
	fixed  uint32 // progressive filling's stamp when its rate was set
}

type xfer struct {
	id    int64
	kind  int8
	flows int32 // in flight
}

// New returns an idle fabric.
func New(f *catalog.Fabric) *Transfers {
	t := &Transfers{f: f, perNIC: f.NICGPUs(), linkIdx: map[uint64]int32{}, nextFlow: math.MaxInt64}
	t.lat = [nKinds]time.Duration{f.NVLink.Latency, f.PCIe.Latency, f.Network.Latency}
	return t
}

// InFlight is how many transfers have started and not yet been returned
// by Done.
func (t *Transfers) InFlight() int { return len(t.xfers) - len(t.freeXfer) + len(t.done) }

// Start begins moving bytes from src to dst at now; id names it in Done.
// The bytes split evenly over max(src.GPUs, dst.GPUs) flows: with equal
// TP, sender rank k sends its KV shard to receiver rank k; with unequal
// TP, the wider side's rank k pairs with rank k·narrow/wide of the other:
// a decode rank pulls its heads from the prefill rank holding them, as
// vLLM's NixlConnector does (vllm/distributed/kv_transfer/kv_connector/v1/
// nixl_connector.py _nixl_handshake: tp_ratio = local TP // remote TP,
// p_remote_rank = tp_rank // tp_ratio), and a narrower decode rank
// gathers from several prefill ranks. now must not go back in time;
// bytes must not be negative.
func (t *Transfers) Start(now time.Duration, id int64, src, dst Place, bytes int64) {
	if bytes < 0 {
		panic(fmt.Sprintf("fabric: transfer %d of %d bytes", id, bytes))
	}
	t.advance(now)
	s, r := max(src.GPUs, 1), max(dst.GPUs, 1)
	n := max(s, r)
	xi := t.newXfer(id)
	kind := kindNVLink
	if t.f.NVLink.Bandwidth <= 0 {
		kind = kindPCIe
	}
	per := float64(bytes) / float64(n)
	for k := 0; k < n; k++ {
		sn, sg := t.gpu(src, k*s/n)
		rn, rg := t.gpu(dst, k*r/n)
		if sn != rn {
			kind = kindNetwork
		}
		if (sn == rn && sg == rg) || bytes == 0 {
			continue // nothing crosses a link
		}
		t.addFlow(xi, sn, sg, rn, rg, per)
	}
	x := &t.xfers[xi] // addFlow may have grown t.xfers
	x.kind = int8(kind)
	if x.flows == 0 {
		t.done.push(done{at: now + t.lat[kind], id: id})
		t.release(xi)
		return
	}
	t.byKind[kind]++
	t.dirty = true // re-share once, however many transfers start at now
}

// Next is when the next transfer may complete (math.MaxInt64: none in
// flight). It is never later than the next completion, and is that
// completion unless a flow finishes earlier and re-shares its links; then
// Done at Next returns nothing and Next moves on.
func (t *Transfers) Next() time.Duration {
	if t.dirty {
		t.reshare()
	}
	next := time.Duration(math.MaxInt64)
	if len(t.done) > 0 {
		next = t.done[0].at
	}
	if t.nextFlow != math.MaxInt64 {
		// No transfer in flight can complete before its last flow ends and
		// the smallest latency in flight has passed.
		lat := time.Duration(math.MaxInt64)
		for k, c := range t.byKind {
			if c > 0 {
				lat = min(lat, t.lat[k])
			}
		}
		next = min(next, t.nextFlow+lat)
	}
	return next
}

// Done appends to dst the ids of the transfers complete by now, in
// completion order (ties by id), and forgets them.
func (t *Transfers) Done(now time.Duration, dst []int64) []int64 {
	t.advance(now)
	for len(t.done) > 0 && t.done[0].at <= now {
		dst = append(dst, t.done.pop().id)
	}
	return dst
}

// gpu is the node and GPU of a place's k-th GPU.
func (t *Transfers) gpu(p Place, k int) (node, gpu int) {
	if p.Node < 0 || p.GPU < 0 {
		panic(fmt.Sprintf("fabric: place %+v", p))
	}
	a := p.GPU + k
	per := max(t.f.GPUsPerNode, 1)
	return p.Node + a/per, a % per
}

// advance moves the fabric to now, finishing every flow due by then in
// time order and re-sharing the links after each.
func (t *Transfers) advance(now time.Duration) {
	if now < t.now {
		panic(fmt.Sprintf("fabric: time went back from %v to %v", t.now, now))
	}
	for {
		if t.dirty {
			if t.now == now {
				// No flow ends in no time (each has bytes left, so at
				// least a ns to go); Next or a later advance re-shares,
				// once for everything that started or ended at now.
				break
			}
			t.reshare()
		}
		if t.nextFlow > now {
			break
		}
		at := t.nextFlow
		t.settle(at)
		for i := 0; i < len(t.active); {
			fi := t.active[i]
			if t.flows[fi].finish > at {
				i++
				continue
			}
			xi := t.flows[fi].xfer
			t.removeFlow(fi) // moves the last active flow to i
			x := &t.xfers[xi]
			if x.flows--; x.flows == 0 {
				t.byKind[x.kind]--
				t.done.push(done{at: at + t.lat[x.kind], id: x.id})
				t.release(xi)
			}
		}
		t.dirty = true
	}
	t.settle(now)
}

// settle takes what every flow moved since the last settle off its
// remaining bytes.
func (t *Transfers) settle(now time.Duration) {
	if dt := (now - t.now).Seconds(); dt > 0 {
		for _, fi := range t.active {
			f := &t.flows[fi]
			f.rem -= f.rate * dt
		}
	}
	t.now = now
}

// reshare gives every in-flight flow its max-min fair rate by progressive
// filling: the link whose capacity split over its unfixed flows is the
// smallest fixes those flows at that share, which comes off the other
// link each of them crosses; repeat. A fixed flow takes no more than its
// other link's share, so that link's share only grows: it sinks in the
// heap. Then every flow's finish time follows from its rate.
func (t *Transfers) reshare() {
	t.dirty = false
	stamp := t.nextStamp()
	t.heap = t.heap[:0]
	for _, fi := range t.active {
		for _, li := range t.flows[fi].links {
			l := &t.links[li]
			if l.stamp != stamp {
				l.stamp, l.rem, l.left = stamp, l.cap, int32(len(l.flows))
				l.share, l.hpos = l.rem/float64(l.left), int32(len(t.heap))
				t.heap = append(t.heap, li)
			}
		}
	}
	for i := len(t.heap)/2 - 1; i >= 0; i-- {
		t.down(i)
	}
	for len(t.heap) > 0 {
		li := t.heap[0]
		t.removeTop()
		l := &t.links[li]
		for _, fi := range l.flows {
			f := &t.flows[fi]
			if f.fixed == stamp {
				continue
			}
			f.fixed, f.rate = stamp, l.share
			o := f.links[0]
			if o == li {
				o = f.links[1]
			}
			ol := &t.links[o]
			ol.rem -= l.share
			if ol.left--; ol.left == 0 {
				t.remove(int(ol.hpos))
				continue
			}
			ol.share = max(ol.rem, 0) / float64(ol.left)
			t.down(int(ol.hpos))
		}
	}
	t.nextFlow = math.MaxInt64
	for _, fi := range t.active {
		f := &t.flows[fi]
		ns := math.Ceil(max(f.rem, 0)/f.rate*1e9 - 1e-3) // a thousandth of a ns of rounding is not late
		f.finish = t.now + time.Duration(max(ns, 0))
		t.nextFlow = min(t.nextFlow, f.finish)
	}
}

// nextStamp is a fresh progressive-filling stamp; 0 is never one, so a
// new link or flow is never mistaken for a visited one.
func (t *Transfers) nextStamp() uint32 {
	t.stamp++
	if t.stamp == 0 { // wrapped: forget every old stamp
		for i := range t.links {
			t.links[i].stamp = 0
		}
		for i := range t.flows {
			t.flows[i].fixed = 0
		}
		t.stamp = 1
	}
	return t.stamp
}

func (t *Transfers) addFlow(xi int32, sn, sg, rn, rg int, bytes float64) {
	var out, in uint64
	var bw float64
	switch {
	case sn != rn:
		out, in, bw = linkKey(kindNetwork, 0, sn, sg/t.perNIC), linkKey(kindNetwork, 1, rn, rg/t.perNIC), t.f.Network.Bandwidth
	case t.f.NVLink.Bandwidth > 0:
		out, in, bw = linkKey(kindNVLink, 0, sn, sg), linkKey(kindNVLink, 1, rn, rg), t.f.NVLink.Bandwidth
	default:
		out, in, bw = linkKey(kindPCIe, 0, sn, sg), linkKey(kindPCIe, 1, rn, rg), t.f.PCIe.Bandwidth
	}
	var fi int32
	if n := len(t.freeFlow); n > 0 {
		fi, t.freeFlow = t.freeFlow[n-1], t.freeFlow[:n-1]
	} else {
		fi = int32(len(t.flows))
		t.flows = append(t.flows, flow{})
	}
	f := &t.flows[fi]
	*f = flow{xfer: xi, rem: bytes, at: int32(len(t.active))}
	for j, key := range [2]uint64{out, in} {
		li := t.link(key, bw)
		f.links[j], f.pos[j] = li, int32(len(t.links[li].flows))
		t.links[li].flows = append(t.links[li].flows, fi)
	}
	t.active = append(t.active, fi)
	t.xfers[xi].flows++
}

// removeFlow takes a flow off its links and the in-flight list by
// swapping the last entry into its place.
func (t *Transfers) removeFlow(fi int32) {
	f := &t.flows[fi]
	for j, li := range f.links {
		l := &t.links[li]
		last := l.flows[len(l.flows)-1]
		l.flows[f.pos[j]] = last
		m := &t.flows[last]
		if m.links[0] == li {
			m.pos[0] = f.pos[j]
		} else {
			m.pos[1] = f.pos[j]
		}
		l.flows = l.flows[:len(l.flows)-1]
	}
	last := t.active[len(t.active)-1]
	t.active[f.at] = last
	t.flows[last].at = f.at
	t.active = t.active[:len(t.active)-1]
	t.freeFlow = append(t.freeFlow, fi)
}

// linkKey names one direction of one GPU's (or NIC's) link of a kind.
func linkKey(kind, dir, node, idx int) uint64 {
	return uint64(kind)<<60 | uint64(dir)<<59 | uint64(uint32(node))<<24 | uint64(idx&0xffffff)
}

func (t *Transfers) link(key uint64, bw float64) int32 {
	if li, ok := t.linkIdx[key]; ok {
		return li
	}
	li := int32(len(t.links))
	t.links = append(t.links, link{cap: bw})
	t.linkIdx[key] = li
	return li
}

func (t *Transfers) newXfer(id int64) int32 {
	var xi int32
	if n := len(t.freeXfer); n > 0 {
		xi, t.freeXfer = t.freeXfer[n-1], t.freeXfer[:n-1]
	} else {
		xi = int32(len(t.xfers))
		t.xfers = append(t.xfers, xfer{})
	}
	t.xfers[xi] = xfer{id: id}
	return xi
}

func (t *Transfers) release(xi int32) { t.freeXfer = append(t.freeXfer, xi) }

// The progressive-filling heap of link indices: smallest share first,
// ties by link index.
func (t *Transfers) less(a, b int32) bool {
	x, y := &t.links[a], &t.links[b]
	return x.share < y.share || (x.share == y.share && a < b)
}

func (t *Transfers) swap(i, j int) {
	h := t.heap
	h[i], h[j] = h[j], h[i]
	t.links[h[i]].hpos, t.links[h[j]].hpos = int32(i), int32(j)
}

func (t *Transfers) removeTop() { t.remove(0) }

// remove takes the heap's i-th entry out.
func (t *Transfers) remove(i int) {
	n := len(t.heap) - 1
	if i != n {
		t.swap(i, n)
	}
	t.heap = t.heap[:n]
	if i < n {
		t.down(i)
		t.up(i)
	}
}

func (t *Transfers) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(t.heap[i], t.heap[p]) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *Transfers) down(i int) {
	n := len(t.heap)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && t.less(t.heap[l], t.heap[m]) {
			m = l
		}
		if r < n && t.less(t.heap[r], t.heap[m]) {
			m = r
		}
		if m == i {
			return
		}
		t.swap(i, m)
		i = m
	}
}

// done is one completed transfer waiting for Done.
type done struct {
	at time.Duration
	id int64
}

// doneHeap orders completions by time, ties by id.
type doneHeap []done

func doneLess(a, b done) bool { return a.at < b.at || (a.at == b.at && a.id < b.id) }

func (h *doneHeap) push(d done) {
	s := append(*h, d)
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !doneLess(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

func (h *doneHeap) pop() done {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && doneLess(s[l], s[m]) {
			m = l
		}
		if r < n && doneLess(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

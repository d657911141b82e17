package calibrate

import (
	"fmt"
	"math"
	"sort"

	"blis/catalog"
	"blis/kernel"
)

func (cf *chipFit) fitComm() ([]catalog.CommLaw, error) {
	var out []catalog.CommLaw
	// NCCL (nccl-tests): message_size is in elements of nccl_dtype
	// (aiconfigurator collector/collect_nccl.py logs size // bytes_per_element).
	t, file, err := cf.table("comm/nccl/2.29.2/nccl_perf.parquet")
	if err != nil {
		return nil, err
	}
	if t != nil {
		c := &cols{t: t}
		op, dt, n, size, lat := c.str("op_name"), c.str("nccl_dtype"), c.num("num_gpus"), c.num("message_size"), c.num("latency")
		if c.err != nil {
			return nil, c.err
		}
		bytes := make([]float64, len(size))
		for i := range size {
			switch dt[i] {
			case "half":
				bytes[i] = 2 * size[i]
			case "int8":
				bytes[i] = size[i]
			default:
				return nil, fmt.Errorf("%s: row %d: unknown nccl_dtype %q", file, i, dt[i])
			}
		}
		// vLLM's tensor-parallel collectives move bf16 activations: fit the
		// half rows (16-bit reductions run alike for fp16 and bf16). The
		// int8 rows reduce more slowly per byte (at 8 GPUs, 134 MB: 186
		// GB/s against 232 GB/s for half) and would price vLLM's
		// all-reduces ~25 % too slow.
		ops := map[string][]int{}
		for i := range lat {
			if lat[i] > 0 && dt[i] == "half" {
				ops[op[i]] = append(ops[op[i]], i)
			}
		}
		var names []string
		for k := range ops {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			law, err := fitCommOp(name, "nccl", file, "nccl_dtype half only (vLLM's activations are 16-bit; the int8 rows are not used); message bytes = 2 × message_size", ops[name], n, bytes, seconds(lat))
			if err != nil {
				return nil, err
			}
			out = append(out, law)
		}
	}
	// vLLM's custom all-reduce, CUDA-graph backend (as vLLM runs it in
	// decode); message_size in bf16 elements.
	t, file, err = cf.table("comm/vllm/0.24.0/custom_allreduce_perf.parquet")
	if err != nil {
		return nil, err
	}
	if t != nil {
		c := &cols{t: t}
		be, dt, n, size, lat := c.str("backend"), c.str("allreduce_dtype"), c.num("num_gpus"), c.num("message_size"), c.num("latency")
		if c.err != nil {
			return nil, c.err
		}
		bytes := make([]float64, len(size))
		var rows []int
		for i := range size {
			if dt[i] != "bfloat16" {
				return nil, fmt.Errorf("%s: row %d: unknown allreduce_dtype %q", file, i, dt[i])
			}
			bytes[i] = 2 * size[i]
			if be[i] == "vllm_graph" && lat[i] > 0 {
				rows = append(rows, i)
			}
		}
		if len(rows) > 0 {
			law, err := fitCommOp("all_reduce", "vllm_custom", file, "backend=vllm_graph (captured in a CUDA graph; the eager rows carry a ~20 µs host floor and are not used), bfloat16", rows, n, bytes, seconds(lat))
			if err != nil {
				return nil, err
			}
			out = append(out, law)
		}
	}
	return out, nil
}

// fitCommOp fits t = α_n + bytes/BW_n for every group size n of one op.
func fitCommOp(op, impl, file, note string, rows []int, n, bytes, y []float64) (catalog.CommLaw, error) {
	gset := map[int]bool{}
	for _, r := range rows {
		if n[r] < 2 || n[r] != float64(int(n[r])) {
			return catalog.CommLaw{}, fmt.Errorf("%s: row %d: num_gpus %g", file, r, n[r])
		}
		gset[int(n[r])] = true
	}
	var gpus []int
	for g := range gset {
		gpus = append(gpus, g)
	}
	sort.Ints(gpus)
	idx := map[int]int{}
	for i, g := range gpus {
		idx[g] = i
	}
	fit, held, shapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{bytes[r]} })
	law := catalog.CommLaw{Op: op, Impl: impl, Points: make([]catalog.CommPoint, len(gpus))}
	set := func(p []float64, l *catalog.CommLaw) {
		for i, g := range gpus {
			l.Points[i] = catalog.CommPoint{GPUs: g, Alpha: p[2*i], BW: p[2*i+1]}
		}
	}
	var kinds []paramKind
	var p0 []float64
	for range gpus {
		kinds = append(kinds, positive, positive)
		p0 = append(p0, quantile(y, fit, 0.02), 2e11)
	}
	scratch := catalog.CommLaw{Points: make([]catalog.CommPoint, len(gpus))}
	fs := &fitSet{y: y, fit: fit, held: held, heldShapes: shapes, kinds: kinds, p0: p0,
		predict: func(p []float64, r int) float64 {
			set(p, &scratch)
			return kernel.CommTime(&scratch, int(n[r]), bytes[r])
		}}
	p, fm, hm := fs.run()
	set(p, &law)
	// The measured times themselves, per group size and message size (the
	// mean of repeated rows), which the pricer interpolates.
	type cell struct {
		sum float64
		n   int
	}
	cells := make([]map[float64]*cell, len(gpus))
	for i := range cells {
		cells[i] = map[float64]*cell{}
	}
	for _, r := range rows {
		c := cells[idx[int(n[r])]][bytes[r]]
		if c == nil {
			c = &cell{}
			cells[idx[int(n[r])]][bytes[r]] = c
		}
		c.sum += y[r]
		c.n++
	}
	for i := range gpus {
		var sizes []float64
		for b := range cells[i] {
			sizes = append(sizes, b)
		}
		sort.Float64s(sizes)
		// A larger message never takes less time (NCCL would pick the
		// smaller message's algorithm for it): a noisy dip is raised to
		// the running maximum, so interpolation stays monotone.
		top := 0.0
		for _, b := range sizes {
			c := cells[i][b]
			top = math.Max(top, catalog.RoundSig(c.sum/float64(c.n), 6))
			law.Points[i].Measured = append(law.Points[i].Measured, catalog.CommSample{Bytes: b, Seconds: top})
		}
	}
	scope := join(
		fmt.Sprintf("op_name=%s, %s", op, note),
		fmt.Sprintf("group sizes %v, messages %g..%g bytes (%d distinct)", gpus, minOf(bytes, rows), maxOf(bytes, rows), shapes),
		heldRule("message size in bytes"),
		"the fit and held-out MAPEs are the affine law's; the pricer interpolates the measured times (kept per group size) and uses the law beyond the largest message",
	)
	law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
	return law, nil
}

package router

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is one EndpointPickerConfig read by Load. It is a validated
// template: New builds a fresh Router from it each time.
type Config struct {
	File       string // where it came from, for messages
	Line       int    // line of the config in File (1 for a plain file)
	APIVersion string
	Source     string // "file", or the YAML path it was embedded at
	root       *yaml.Node
	opts       Options
}

// Options tune what llm-d leaves to deployment flags rather than the
// config file.
type Options struct {
	// ScrapeInterval is GIE's --refresh-metrics-interval (default 50ms).
	ScrapeInterval time.Duration
	// KVEventDelay is how long an engine KV event takes to reach a precise
	// prefix index (ZMQ publish + indexer workers; default 5ms).
	KVEventDelay time.Duration
}

// DefaultScrapeInterval is the EPP's --refresh-metrics-interval default
// (pkg/epp/server/options.go @ 520af478).
const DefaultScrapeInterval = 50 * time.Millisecond

// DefaultKVEventDelay is the default KV-event propagation delay.
const DefaultKVEventDelay = 5 * time.Millisecond

var apiVersions = []string{"llm-d.ai/v1alpha1", "llm-d.ai/v1", "inference.networking.x-k8s.io/v1alpha1"}

// Load reads the first EndpointPickerConfig in data: a plain config file
// (apiVersion llm-d.ai/v1alpha1, llm-d.ai/v1 or
// inference.networking.x-k8s.io/v1alpha1; plugins-v2.yaml ConfigMap
// content), or a Helm values / llm-d-benchmark scenario file that embeds one
// (…epp.pluginsCustomConfig[<pluginsConfigFile>], or any string or mapping
// holding kind: EndpointPickerConfig). file names the input in errors.
func Load(data []byte, file string) (*Config, error) {
	all, err := LoadAll(data, file)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// LoadAll is Load for every EndpointPickerConfig in data, in file order.
func LoadAll(data []byte, file string) ([]*Config, error) {
	docs, err := parseDocs(data, file, 0)
	if err != nil {
		return nil, err
	}
	var found []*Config
	for _, d := range docs {
		if err := collect(d, file, 0, 0, "", &found); err != nil {
			return nil, err
		}
	}
	if len(found) == 0 {
		return nil, &ConfigError{File: file, Msg: "no EndpointPickerConfig found (expected kind: EndpointPickerConfig, or a Helm values file with router.epp.pluginsCustomConfig)"}
	}
	for _, c := range found {
		if _, err := c.New(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func parseDocs(data []byte, file string, off int) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			msg := err.Error()
			msg = strings.TrimPrefix(msg, "yaml: ")
			line := 0
			if i := strings.Index(msg, "line "); i >= 0 {
				fmt.Sscanf(msg[i+5:], "%d", &line)
			}
			if line > 0 {
				line += off
			}
			return nil, &ConfigError{File: file, Line: line, Msg: "not valid YAML: " + msg}
		}
		if len(n.Content) == 0 {
			continue
		}
		docs = append(docs, &n)
	}
	return docs, nil
}

// collect finds configs under n: a mapping with kind EndpointPickerConfig,
// a pluginsCustomConfig map, or a string that holds one. depth counts the
// strings n is inside.
func collect(n *yaml.Node, file string, off, depth int, path string, out *[]*Config) error {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := collect(c, file, off, depth, path, out); err != nil {
				return err
			}
		}
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if k, ok := lookupKey(n, "kind"); ok && k.Value == "EndpointPickerConfig" {
			src := "file"
			if path != "" {
				src = path
			}
			shift(n, off) // nodes report lines of the file, not of the embedded string
			api := ""
			if v, ok := lookupKey(n, "apiVersion"); ok {
				api = v.Value
			}
			*out = append(*out, &Config{File: file, Line: n.Line, Source: src, APIVersion: api, root: n})
			return nil
		}
		if pc, ok := lookupKey(n, "pluginsCustomConfig"); ok && pc.Kind == yaml.MappingNode {
			want := ""
			if f, ok := lookupKey(n, "pluginsConfigFile"); ok {
				want = f.Value
			}
			return collectCustom(pc, want, file, off, depth, join(path, "pluginsCustomConfig"), out)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := collect(n.Content[i+1], file, off, depth, join(path, n.Content[i].Value), out); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := collect(c, file, off, depth, join(path, strconv.Itoa(i)), out); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "EndpointPickerConfig") && strings.Contains(n.Value, "kind:") {
			return collectString(n, file, off, depth, path, out)
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func collectCustom(pc *yaml.Node, want, file string, off, depth int, path string, out *[]*Config) error {
	var names []string
	for i := 0; i+1 < len(pc.Content); i += 2 {
		names = append(names, pc.Content[i].Value)
	}
	if want != "" {
		v, ok := lookupKey(pc, want)
		if !ok {
			return &ConfigError{File: file, Line: pc.Line + off, Key: "pluginsConfigFile", Value: want,
				Msg: "names no entry of pluginsCustomConfig (has: " + strings.Join(names, ", ") + "); a config built into the EPP image cannot be read"}
		}
		return collectString(v, file, off, depth, path+"."+want, out)
	}
	for i := 0; i+1 < len(pc.Content); i += 2 {
		if err := collectString(pc.Content[i+1], file, off, depth, path+"."+pc.Content[i].Value, out); err != nil {
			return err
		}
	}
	return nil
}

// maxStringDepth bounds strings holding strings that hold a config (a Helm
// value's string holds the config itself: depth 1).
const maxStringDepth = 8

// collectString parses an embedded config; its lines count from the line
// after a block scalar's indicator. A document that is the string itself
// again (plain text such as "kind:x EndpointPickerConfig") holds nothing
// more, and nesting stops at maxStringDepth, so the walk always ends.
func collectString(n *yaml.Node, file string, off, depth int, path string, out *[]*Config) error {
	if n.Kind != yaml.ScalarNode {
		return &ConfigError{File: file, Line: n.Line + off, Key: path, Msg: "must be a string holding an EndpointPickerConfig"}
	}
	if depth >= maxStringDepth {
		return &ConfigError{File: file, Line: n.Line + off, Key: path, Msg: fmt.Sprintf("strings holding strings nest more than %d deep here; put the EndpointPickerConfig in one string", maxStringDepth)}
	}
	inner := n.Line + off - 1
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		inner = n.Line + off
	}
	docs, err := parseDocs([]byte(n.Value), file, inner)
	if err != nil {
		return err
	}
	before := len(*out)
	for _, d := range docs {
		if s := d.Content[0]; s.Kind == yaml.ScalarNode && s.Value == n.Value {
			continue
		}
		if err := collect(d, file, inner, depth+1, path, out); err != nil {
			return err
		}
	}
	if len(*out) == before {
		return &ConfigError{File: file, Line: n.Line + off, Key: path, Msg: "holds no EndpointPickerConfig"}
	}
	return nil
}

// WithOptions returns a copy of c whose routers use o (zero fields keep
// the defaults).
func (c *Config) WithOptions(o Options) *Config {
	d := *c
	d.opts = o
	return &d
}

func (c *Config) errAt(n *yaml.Node, key, value, msg string) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ConfigError{File: c.File, Line: line, Key: key, Value: value, Msg: msg}
}

// builder assembles an EPP from a config.
type builder struct {
	file         string
	opts         Options
	byName       map[string]any
	names        []string
	profiles     map[string]*profile
	links        []func() error
	prefixUsers  []prefixUser
	affinity     []*prefixAffinityFilter
	needInflight bool
	needLatency  bool
	hasKV        bool
}

type prefixUser struct {
	name     string
	set      func(prefixSource)
	optional bool
}

var topKeys = []string{"apiVersion", "kind", "featureGates", "plugins", "schedulingProfiles", "saturationDetector", "dataLayer", "flowControl", "parser"}

// New builds a fresh Router from the config.
func (c *Config) New() (*EPP, error) {
	root := c.root
	o := c.opts
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = DefaultScrapeInterval
	}
	if o.KVEventDelay == 0 {
		o.KVEventDelay = DefaultKVEventDelay
	}
	b := &builder{file: c.File, opts: o, byName: map[string]any{}, profiles: map[string]*profile{}}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if !slices.Contains(topKeys, k.Value) {
			return nil, c.errAt(k, k.Value, "", "unknown top-level key; accepted: "+strings.Join(topKeys, ", "))
		}
	}
	if v, ok := lookupKey(root, "apiVersion"); ok {
		if !slices.Contains(apiVersions, v.Value) {
			return nil, c.errAt(v, "apiVersion", v.Value, "unsupported; accepted: "+strings.Join(apiVersions, ", "))
		}
	}
	gates := map[string]bool{}
	if v, ok := lookupKey(root, "featureGates"); ok && v.Kind == yaml.SequenceNode {
		for _, g := range v.Content {
			gates[g.Value] = true
		}
	} else if ok && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
		return nil, c.errAt(v, "featureGates", "", "must be a list of feature names")
	}
	// plugins
	pl, _ := lookupKey(root, "plugins")
	if pl != nil && pl.Kind != yaml.SequenceNode && pl.Tag != "!!null" {
		return nil, c.errAt(pl, "plugins", "", "must be a list of {type, name, parameters}")
	}
	e := &EPP{scrape: o.ScrapeInterval}
	if pl != nil {
		for _, pn := range pl.Content {
			var typ, name string
			var pnode *yaml.Node
			for i := 0; i+1 < len(pn.Content); i += 2 {
				switch pn.Content[i].Value {
				case "type":
					typ = pn.Content[i+1].Value
				case "name":
					name = pn.Content[i+1].Value
				case "parameters":
					pnode = pn.Content[i+1]
				default:
					return nil, &ConfigError{File: c.File, Line: pn.Content[i].Line, Key: "plugins[]." + pn.Content[i].Value, Msg: "unknown key; accepted: type, name, parameters"}
				}
			}
			if typ == "" {
				return nil, &ConfigError{File: c.File, Line: pn.Line, Key: "plugins[].type", Msg: "every plugin needs a type"}
			}
			pt, ok := registry[typ]
			if !ok {
				return nil, &ConfigError{File: c.File, Line: pn.Line, Key: "type", Value: typ,
					Msg: "unknown plugin type; supported (llm-d-inference-scheduler 520af478 unless noted in the README): " + typeNames()}
			}
			if name == "" {
				name = typ
			}
			if _, dup := b.byName[name]; dup {
				return nil, &ConfigError{File: c.File, Line: pn.Line, Key: "name", Value: name, Msg: "two plugins share this name"}
			}
			where := "plugin " + name
			if name != typ {
				where += " (type " + typ + ")"
			}
			v, err := pt.build(b, name, newParams(c.File, where, pnode))
			if err != nil {
				return nil, err
			}
			b.byName[name] = v
			b.names = append(b.names, name)
		}
	}
	// scheduling profiles
	sp, _ := lookupKey(root, "schedulingProfiles")
	if sp != nil && sp.Kind == yaml.SequenceNode {
		for _, pn := range sp.Content {
			if err := b.profile(c, pn, e); err != nil {
				return nil, err
			}
		}
	}
	if len(e.order) == 0 {
		// ensureSchedulingLayer: a default profile with every filter, scorer
		// and picker, in declaration order.
		p := &profile{name: "default"}
		for _, n := range b.names {
			b.addToProfile(p, b.byName[n], 1)
		}
		b.profiles["default"] = p
		e.order = append(e.order, p)
	}
	// default picker: the first picker declared, else max-score-picker
	var defPicker pickerPlugin = maxScorePicker{}
	for _, n := range b.names {
		if pk, ok := b.byName[n].(pickerPlugin); ok {
			defPicker = pk
			break
		}
	}
	for _, p := range e.order {
		if p.picker == nil {
			p.picker = defPicker
		}
	}
	if err := b.link(); err != nil {
		return nil, err
	}
	for _, n := range b.names {
		if d, ok := b.byName[n].(*decisionTree); ok && treeCycle(d, nil) {
			return nil, &ConfigError{File: c.File, Key: "plugins", Value: n, Msg: "decision tree refers to itself"}
		}
	}
	// producers with their own consumers
	for _, n := range b.names {
		if s, ok := b.byName[n].(*prefixScorer); ok && s.own != nil {
			b.adopt(e, s.own)
		}
	}
	// prefix sources
	var sources []string
	for _, n := range b.names {
		if _, ok := b.byName[n].(prefixSource); ok {
			if _, isScorer := b.byName[n].(*prefixScorer); !isScorer {
				sources = append(sources, n)
			}
		}
	}
	var auto prefixSource
	for _, u := range b.prefixUsers {
		if u.name != "" {
			src, ok := b.byName[u.name].(prefixSource)
			if !ok {
				return nil, &ConfigError{File: c.File, Key: "prefixMatchInfoProducerName", Value: u.name, Msg: "not a prefix-cache producer declared under plugins"}
			}
			u.set(src)
			continue
		}
		if len(sources) > 0 {
			u.set(b.byName[sources[0]].(prefixSource))
			continue
		}
		if p := firstOwnSource(b); p != nil {
			u.set(p)
			continue
		}
		if u.optional {
			continue
		}
		if auto == nil {
			// RegisterAsDefaultProducer: a consumer of PrefixCacheMatchInfo
			// with no producer gets approx-prefix-cache-producer defaults.
			a, _ := buildApprox(newParams(c.File, "approx-prefix-cache-producer", nil), false)
			b.addImplicit("approx-prefix-cache-producer", a)
			auto = a
		}
		u.set(auto)
	}
	if b.needLatency && !b.has(func(v any) bool { _, ok := v.(*latencyProducer); return ok }) {
		l := &latencyProducer{}
		if len(sources) > 0 {
			l.src = b.byName[sources[0]].(prefixSource)
		}
		b.addImplicit("predicted-latency-producer", l)
	}
	for _, f := range b.affinity {
		for _, n := range b.names {
			if l, ok := b.byName[n].(*latencyProducer); ok {
				f.latency = l
			}
		}
	}
	if b.needInflight && !b.has(func(v any) bool { _, ok := v.(inflightProducer); return ok }) {
		b.addImplicit("inflight-load-producer", inflightProducer{})
	}
	for _, n := range b.names {
		b.adopt(e, b.byName[n])
	}
	sort.SliceStable(e.prod, func(i, j int) bool {
		_, li := e.prod[i].(*latencyProducer)
		_, lj := e.prod[j].(*latencyProducer)
		return !li && lj
	})
	// profile handler
	var handlers []string
	for _, n := range b.names {
		if _, ok := b.byName[n].(profileHandler); ok {
			handlers = append(handlers, n)
		}
	}
	switch {
	case len(handlers) > 1:
		return nil, &ConfigError{File: c.File, Key: "plugins", Value: strings.Join(handlers, ", "), Msg: "more than one profile handler"}
	case len(handlers) == 1:
		e.handler = b.byName[handlers[0]].(profileHandler)
		if s, ok := e.handler.(*singleHandler); ok {
			if len(e.order) != 1 {
				return nil, &ConfigError{File: c.File, Key: "schedulingProfiles", Msg: handlers[0] + " needs exactly one scheduling profile, found " + strconv.Itoa(len(e.order))}
			}
			s.p = e.order[0]
		}
	default:
		if len(e.order) != 1 {
			return nil, &ConfigError{File: c.File, Key: "schedulingProfiles", Msg: "several profiles need a profile handler plugin (disagg-profile-handler or pd-profile-handler)"}
		}
		e.handler = &singleHandler{p: e.order[0]}
	}
	// saturation detector and flow control
	det, err := b.detector(c, root, "saturationDetector")
	if err != nil {
		return nil, err
	}
	e.detector = det
	// flowControl is only respected with the "flowControl" feature gate
	// (apix/config/v1alpha1 @ 520af478); it is still validated without it.
	fc, _ := lookupKey(root, "flowControl")
	f, err := b.flow(c, fc, det)
	if err != nil {
		return nil, err
	}
	if gates["flowControl"] {
		f.e = e
		e.flow = f
	}
	for _, key := range []string{"dataLayer", "parser"} {
		if v, ok := lookupKey(root, key); ok {
			if err := b.checkRefs(c, v, key); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func firstOwnSource(b *builder) prefixSource {
	for _, n := range b.names {
		if s, ok := b.byName[n].(*prefixScorer); ok && s.own != nil {
			return s.src
		}
	}
	return nil
}

func shift(n *yaml.Node, off int) {
	if off == 0 || n == nil {
		return
	}
	n.Line += off
	for _, c := range n.Content {
		shift(c, off)
	}
}

// addImplicit adds a plugin the config did not declare (a producer its
// consumers need) under its type name, or, when a declared plugin already
// has that name, the first of name-2, name-3, … that is free: the declared
// plugin keeps its name and its hooks.
func (b *builder) addImplicit(name string, v any) {
	n := name
	for i := 2; b.taken(n); i++ {
		n = name + "-" + strconv.Itoa(i)
	}
	b.byName[n] = v
	b.names = append(b.names, n)
}

func (b *builder) taken(name string) bool {
	_, ok := b.byName[name]
	return ok
}

func (b *builder) has(f func(any) bool) bool {
	for _, n := range b.names {
		if f(b.byName[n]) {
			return true
		}
	}
	return false
}

// adopt registers v's hooks with the EPP (each once).
func (b *builder) adopt(e *EPP, v any) {
	for _, s := range e.starters {
		if any(s) == v {
			return
		}
	}
	if p, ok := v.(producerPlugin); ok {
		e.prod = append(e.prod, p)
	}
	if p, ok := v.(preRequestPlugin); ok {
		e.pre = append(e.pre, p)
	}
	if p, ok := v.(completePlugin); ok {
		e.done = append(e.done, p)
	}
	if p, ok := v.(admitterPlugin); ok {
		e.admit = append(e.admit, p)
	}
	if p, ok := v.(kvEventPlugin); ok {
		e.kv = append(e.kv, p)
	}
	if s, ok := v.(interface{ start(*EPP) }); ok {
		e.starters = append(e.starters, s)
	}
}

func (b *builder) link() error {
	for _, l := range b.links {
		if err := l(); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) addToProfile(p *profile, v any, w float64) bool {
	used := false
	if f, ok := v.(filterPlugin); ok {
		p.filters = append(p.filters, f)
		used = true
	}
	if s, ok := v.(scorerPlugin); ok {
		p.scorers = append(p.scorers, scoredRef{s: s, weight: w})
		used = true
	}
	if pk, ok := v.(pickerPlugin); ok && p.picker == nil {
		p.picker = pk
		used = true
	}
	return used
}

func (b *builder) profile(c *Config, pn *yaml.Node, e *EPP) error {
	q := newParams(c.File, "scheduling profile", pn)
	name := ""
	q.String("name", &name)
	plugins := q.Node("plugins")
	if err := q.done(); err != nil {
		return err
	}
	if name == "" {
		return &ConfigError{File: c.File, Line: pn.Line, Key: "schedulingProfiles[].name", Msg: "every profile needs a name"}
	}
	if _, dup := b.profiles[name]; dup {
		return &ConfigError{File: c.File, Line: pn.Line, Key: "schedulingProfiles[].name", Value: name, Msg: "two profiles share this name"}
	}
	p := &profile{name: name}
	if plugins != nil {
		for _, r := range plugins.Content {
			rq := newParams(c.File, "profile "+name, r)
			ref := ""
			w := 1.0
			rq.String("pluginRef", &ref)
			hasW := rq.Float("weight", &w)
			if err := rq.done(); err != nil {
				return err
			}
			v, ok := b.byName[ref]
			if !ok {
				return &ConfigError{File: c.File, Line: r.Line, Key: "pluginRef", Value: ref, Msg: "profile " + name + ": no plugin of that name under plugins"}
			}
			if hasW && w < 0 {
				return &ConfigError{File: c.File, Line: r.Line, Key: "weight", Value: ftoa(w), Msg: "must be >= 0"}
			}
			if !b.addToProfile(p, v, w) {
				if _, isProducer := v.(producerPlugin); isProducer {
					continue // llm-d tolerates producers listed in a profile
				}
				if _, isNoop := v.(noop); isNoop {
					continue
				}
				return &ConfigError{File: c.File, Line: r.Line, Key: "pluginRef", Value: ref, Msg: "profile " + name + ": not a filter, scorer or picker"}
			}
		}
	}
	b.profiles[name] = p
	e.order = append(e.order, p)
	return nil
}

// detector reads saturationDetector: {pluginRef} or the older inline
// utilization parameters; default utilization-detector defaults.
func (b *builder) detector(c *Config, root *yaml.Node, key string) (saturationPlugin, error) {
	v, ok := lookupKey(root, key)
	if !ok || v.Kind != yaml.MappingNode {
		d, _ := buildUtilization(newParams(c.File, "utilization-detector", nil))
		return d, nil
	}
	if ref, ok := lookupKey(v, "pluginRef"); ok {
		s, ok := b.byName[ref.Value].(saturationPlugin)
		if !ok {
			return nil, c.errAt(ref, key+".pluginRef", ref.Value, "not a saturation detector plugin (utilization-detector, concurrency-detector) declared under plugins")
		}
		return s, nil
	}
	return buildUtilization(newParams(c.File, key, v))
}

func (b *builder) flow(c *Config, n *yaml.Node, det saturationPlugin) (*flowControl, error) {
	f := &flowControl{detector: det}
	if n == nil || n.Kind != yaml.MappingNode {
		return f, nil
	}
	q := newParams(c.File, "flowControl", n)
	qty := func(q *params, key string, dst *int64) {
		var s string
		if !q.String(key, &s) {
			return
		}
		v, err := parseQuantity(s)
		if err != nil {
			q.fail(q.lookup(key), key, s, "must be a Kubernetes quantity such as 500, 1k or 10Gi")
			return
		}
		*dst = v
	}
	var mr int64
	qty(q, "maxBytes", &f.maxBytes)
	qty(q, "maxRequests", &mr)
	f.maxRequests = int(mr)
	q.Duration("defaultRequestTTL", &f.ttl)
	if sd := q.Node("saturationDetector"); sd != nil {
		d, err := b.detector(c, n, "saturationDetector")
		if err != nil {
			return nil, err
		}
		f.detector = d
	}
	if db := q.Node("defaultPriorityBand"); db != nil {
		bq := newParams(c.File, "flowControl.defaultPriorityBand", db)
		var r int64
		qty(bq, "maxBytes", &f.defBand.maxBytes)
		qty(bq, "maxRequests", &r)
		f.defBand.maxRequests = int(r)
		bq.Ignore("priority", "fairnessPolicyRef", "orderingPolicyRef")
		if err := bq.done(); err != nil {
			return nil, err
		}
	}
	if pb := q.Node("priorityBands"); pb != nil {
		for _, bn := range pb.Content {
			bq := newParams(c.File, "flowControl.priorityBands[]", bn)
			bd := &band{}
			var r int64
			bq.Int("priority", &bd.priority)
			qty(bq, "maxBytes", &bd.lim.maxBytes)
			qty(bq, "maxRequests", &r)
			bd.lim.maxRequests = int(r)
			for _, k := range []string{"fairnessPolicyRef", "orderingPolicyRef"} {
				var ref string
				if bq.String(k, &ref) {
					if _, ok := b.byName[ref]; !ok && ref != "fcfs-ordering-policy" && ref != "round-robin-fairness-policy" && ref != "global-strict-fairness-policy" {
						bq.fail(bq.lookup(k), k, ref, "no plugin of that name under plugins")
					}
				}
			}
			if err := bq.done(); err != nil {
				return nil, err
			}
			f.bands = append(f.bands, bd)
		}
		sort.SliceStable(f.bands, func(i, j int) bool { return f.bands[i].priority > f.bands[j].priority })
	}
	q.Ignore("usageLimitPolicyPluginRef")
	return f, q.done()
}

// parseQuantity reads a Kubernetes resource quantity (plain, k/M/G/T,
// Ki/Mi/Gi/Ti).
func parseQuantity(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suf string
		m   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult > 1<<62 {
		return 0, errors.New("bad quantity")
	}
	return int64(v * mult), nil
}

// checkRefs verifies that every pluginRef under n names a declared plugin.
func (b *builder) checkRefs(c *Config, n *yaml.Node, key string) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "pluginRef" && v.Kind == yaml.ScalarNode {
				if _, ok := b.byName[v.Value]; !ok && !builtinRef(v.Value) {
					return c.errAt(v, key+".pluginRef", v.Value, "no plugin of that name under plugins")
				}
				continue
			}
			if err := b.checkRefs(c, v, key); err != nil {
				return err
			}
		}
	}
	if n.Kind == yaml.SequenceNode {
		for _, x := range n.Content {
			if err := b.checkRefs(c, x, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// builtinRef: plugins the EPP registers by default when a config refers
// to them without declaring them (ensureParser, ensureDataLayer).
func builtinRef(s string) bool {
	switch s {
	case "openai-parser", "metrics-data-source", "core-metrics-extractor", "endpoint-notification-source":
		return true
	}
	return false
}

// treeCycle reports whether a decision tree reaches one of its ancestors.
func treeCycle(d *decisionTree, path []*decisionTree) bool {
	if slices.Contains(path, d) {
		return true
	}
	path = append(path, d)
	for _, f := range []filterPlugin{d.current, d.onSuccess, d.onFailure, d.onEither} {
		if c, ok := f.(*decisionTree); ok && treeCycle(c, path) {
			return true
		}
	}
	return false
}

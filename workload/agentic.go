package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"blis/sim"
)

// AgenticSpec shapes BLIS's synthetic agentic-coding sessions: an agent
// loop in which each turn sends the whole conversation so far plus new tool
// results, the context grows to 100k+ tokens over tens of turns, tool and
// think gaps are heavy-tailed, and the agent now and then hands a task to
// sub-agents and waits for them. The zero value stands for
// DefaultAgenticSpec; any other value is taken as given.
//
// The shapes below are assumptions chosen to resemble public descriptions
// of coding agents (a large shared system prompt with tool definitions,
// short tool-call replies, long file reads), not fits to a corpus: use a
// real trace in the sessions format when one is available.
type AgenticSpec struct {
	// NumSessions is the number of top-level sessions (default 100).
	NumSessions int
	// SessionRate is sessions started per second, Poisson (default 0.2).
	// 0 writes no timestamps: sessions then start by --request-rate.
	SessionRate float64
	// SystemPromptTokens is the shared system prompt, instructions plus tool
	// definitions (default 12000).
	SystemPromptTokens int
	// MeanTurns is the mean number of turns per session, lognormal with
	// σ = 0.6 (default 30).
	MeanTurns float64
	// MaxContextTokens ends a session before its context would exceed it,
	// as an agent compacts or stops (default 200000).
	MaxContextTokens int
	// SubagentProb is the chance that a turn (not the last) spawns
	// sub-agents (default 0.05); 1–3 of them, run in parallel and joined.
	SubagentProb float64
	// ForkProb is the share of sub-agents that start from the parent's
	// context; the others start fresh with their own shared system prompt
	// of SubagentSystemPromptTokens (default 0.25 and 4000).
	ForkProb                   float64
	SubagentSystemPromptTokens int
}

// DefaultAgenticSpec returns the defaults documented on AgenticSpec.
func DefaultAgenticSpec() AgenticSpec {
	return AgenticSpec{NumSessions: 100, SessionRate: 0.2, SystemPromptTokens: 12000, MeanTurns: 30,
		MaxContextTokens: 200000, SubagentProb: 0.05, ForkProb: 0.25, SubagentSystemPromptTokens: 4000}
}

func (a AgenticSpec) resolve() (AgenticSpec, error) {
	if a == (AgenticSpec{}) {
		a = DefaultAgenticSpec()
	}
	// Two keys are blis run flags; the others are set only by programs.
	flags := map[string]string{"num_sessions": "--agentic-num-sessions", "session_rate": "--agentic-session-rate"}
	bad := func(key, v, allowed string) error {
		name, ok := flags[key]
		if !ok {
			name = "agentic " + key
		}
		return badInput(name, v, allowed)
	}
	switch {
	case a.NumSessions < 1 || a.NumSessions > 1<<30:
		return a, bad("num_sessions", strconv.Itoa(a.NumSessions), "must be in [1, 2^30]")
	case !(a.SessionRate >= 0) || math.IsInf(a.SessionRate, 1):
		return a, bad("session_rate", fmtFloat(a.SessionRate), "must be a finite number ≥ 0 (sessions per second; 0: no timestamps)")
	case a.SessionRate > 0 && float64(a.NumSessions)/a.SessionRate > maxSpanSeconds:
		return a, bad("session_rate", fmtFloat(a.SessionRate), "too low for --agentic-num-sessions: the sessions would span more than 1e9 s")
	case a.SystemPromptTokens < 0 || a.SystemPromptTokens > MaxTokens:
		return a, bad("system_prompt_tokens", strconv.Itoa(a.SystemPromptTokens), tokenRange(0))
	case !(a.MeanTurns >= 1 && a.MeanTurns <= 1000):
		return a, bad("mean_turns", fmtFloat(a.MeanTurns), "must be in [1, 1000]")
	case a.MaxContextTokens < 1000 || a.MaxContextTokens > MaxTokens:
		return a, bad("max_context_tokens", strconv.Itoa(a.MaxContextTokens), fmt.Sprintf("must be in [1000, %d]", MaxTokens))
	case !(a.SubagentProb >= 0 && a.SubagentProb <= 1):
		return a, bad("subagent_prob", fmtFloat(a.SubagentProb), "must be in [0, 1]")
	case !(a.ForkProb >= 0 && a.ForkProb <= 1):
		return a, bad("fork_prob", fmtFloat(a.ForkProb), "must be in [0, 1]")
	case a.SubagentSystemPromptTokens < 0 || a.SubagentSystemPromptTokens > MaxTokens:
		return a, bad("subagent_system_prompt_tokens", strconv.Itoa(a.SubagentSystemPromptTokens), tokenRange(0))
	}
	return a, nil
}

// WriteAgentic writes spec's synthetic sessions to w in the sessions format,
// one line per session, generated one at a time. The same spec and seed
// always write the same bytes, and reading them back ("sessions") yields
// what NewAgentic does.
func WriteAgentic(w io.Writer, spec AgenticSpec, seed int64) error {
	a, err := spec.resolve()
	if err != nil {
		return err
	}
	g := newAgenticGen(a, seed)
	bw := bufio.NewWriter(w)
	for {
		rec, ok := g.next()
		if !ok {
			break
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// NewAgentic returns spec.Agentic's synthetic sessions as a source, seeded
// by spec.Seed; fixed-schedule and rate settings apply as to a sessions
// file. Memory: one session at a time.
func NewAgentic(spec TraceSpec) (Source, error) {
	a, err := spec.Agentic.resolve()
	if err != nil {
		return nil, err
	}
	s, err := newSessionsCommon("agentic", spec)
	if err != nil {
		return nil, err
	}
	s.gen = newAgenticGen(a, spec.Seed)
	return s, nil
}

type agenticGen struct {
	a    AgenticSpec
	rng  *rand.Rand
	done int
	t    float64 // ms
}

func newAgenticGen(a AgenticSpec, seed int64) *agenticGen {
	return &agenticGen{a: a, rng: sim.RNG(seed, "workload.agentic")}
}

// lognormal draws exp(N(ln median, σ²)), rounded and clamped to [lo, hi].
func (g *agenticGen) lognormal(median, sigma float64, lo, hi int) int {
	v := math.Round(median * math.Exp(sigma*g.rng.NormFloat64()))
	return int(min(max(v, float64(lo)), float64(hi)))
}

// gap draws a tool or think gap in ms: three in four are tool calls that
// return quickly (lognormal, median 1.2 s); the rest are Pareto(α = 1.3)
// from 5 s — builds, test runs, a human reading — capped at 30 minutes.
func (g *agenticGen) gap() float64 {
	if g.rng.Float64() < 0.75 {
		return math.Round(1200 * math.Exp(1.0*g.rng.NormFloat64()))
	}
	u := 1 - g.rng.Float64() // (0, 1]
	return math.Round(min(5000*math.Pow(u, -1/1.3), 30*60*1000))
}

func (g *agenticGen) next() (*SessionRecord, bool) {
	if g.done >= g.a.NumSessions {
		return nil, false
	}
	g.done++
	rec := &SessionRecord{SessionID: "agent-" + strconv.Itoa(g.done)}
	if g.a.SessionRate > 0 {
		if g.done > 1 {
			g.t += math.Round(g.rng.ExpFloat64() / g.a.SessionRate * 1000)
		}
		ts := g.t
		rec.Timestamp = &ts
	}
	sys := 0
	if g.a.SystemPromptTokens > 0 {
		rec.SystemPrompt = &SystemPrompt{ID: "agentic-system", Tokens: g.a.SystemPromptTokens}
		sys = g.a.SystemPromptTokens
	}
	turns := g.lognormal(g.a.MeanTurns*math.Exp(-0.18), 0.6, 2, 400)
	rec.Turns = g.turns(turns, sys, 400, true, rec.SessionID)
	return rec, true
}

// turns draws up to n turns of a session whose context starts at ctx0
// tokens, the first user message with median firstMedian.
func (g *agenticGen) turns(n, ctx0 int, firstMedian float64, top bool, label string) []SessionTurn {
	out := make([]SessionTurn, 0, n)
	ctx := ctx0
	for k := 0; k < n; k++ {
		var t SessionTurn
		if k == 0 {
			t.InputTokens = g.lognormal(firstMedian, 1.0, 16, 20000)
		} else {
			t.Delay = g.gap()
			t.InputTokens = g.lognormal(1000, 1.3, 16, 60000) // tool results, file reads, user replies
		}
		t.OutputTokens = g.lognormal(200, 1.0, 8, 16000) // mostly short tool calls, now and then code
		if ctx+t.InputTokens+t.OutputTokens > g.a.MaxContextTokens && k > 0 {
			break
		}
		ctx += t.InputTokens + t.OutputTokens
		if top && k < n-1 && g.rng.Float64() < g.a.SubagentProb {
			nb := 1
			if u := g.rng.Float64(); u < 0.1 {
				nb = 3
			} else if u < 0.3 {
				nb = 2
			}
			for b := range nb {
				t.Branches = append(t.Branches, g.subagent(ctx, fmt.Sprintf("%s.t%d.s%d", label, k, b)))
			}
		}
		out = append(out, t)
	}
	// A branch on the last turn has nothing to join it: drop it.
	if len(out) > 0 {
		out[len(out)-1].Branches = nil
	}
	return out
}

func (g *agenticGen) subagent(parentCtx int, label string) SessionRecord {
	rec := SessionRecord{SessionID: label, Context: ContextFresh}
	ctx := 0
	if g.rng.Float64() < g.a.ForkProb {
		rec.Context = ContextFork
		ctx = parentCtx
	} else if g.a.SubagentSystemPromptTokens > 0 {
		rec.SystemPrompt = &SystemPrompt{ID: "agentic-subagent", Tokens: g.a.SubagentSystemPromptTokens}
		ctx = g.a.SubagentSystemPromptTokens
	}
	n := g.lognormal(8, 0.7, 1, 60)
	rec.Turns = g.turns(n, ctx, 300, false, label)
	if len(rec.Turns) == 0 {
		rec.Turns = []SessionTurn{{InputTokens: 16, OutputTokens: 8}}
	}
	rec.Turns[0].Delay = math.Round(300 * math.Exp(0.5*g.rng.NormFloat64())) // spawn overhead
	return rec
}

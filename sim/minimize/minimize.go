// Package minimize shortens a scenario while it still ends the same way:
// delta debugging (Zeller and Hildebrandt's ddmin) over its steps, its
// set-up objects and its node groups, then over the fields of the bodies it
// writes, each candidate judged by a real run that the caller makes
// (simctl minimize runs them on one cluster it starts for the purpose).
// It is the last step from an incident to a scenario short enough to file
// upstream: an imported audit log (sim/auditimport) holds every write of a
// TrainJob's history, most of which do not matter to how it ends.
//
// What it keeps: the steps after the last write (the ending, what the
// scenario asserts), or the step a failing scenario fails at; refused
// writes (a refusal is an outcome) unless Options.DropRefusals; the steps
// Options.Keep names; and, with every write step, the expect-only steps just
// before it (an imported scenario's waits, which order the write after a
// component's work), which go only with the write.
//
// What it cannot do: a candidate is judged by one run, so a candidate that
// ends the same way by chance (a race whose order the removed steps used to
// state) can be taken. The caller runs the result again (simctl minimize
// --verify) and says when it does not always end the same way.
package minimize

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// DefaultMaxRuns bounds the runs of Minimize when Options.MaxRuns is 0.
const DefaultMaxRuns = 400

// Outcome is how one run of a scenario ended.
type Outcome struct {
	// Passed is true when every step passed.
	Passed bool
	// Step is the step it failed at, "" when it passed.
	Step string
	// Failure is the failure's first line, with what differs from one
	// run to the next (the namespace) taken out by the Test.
	Failure string
}

// Same reports whether o ends as want does: both passed, or both failed at
// the same step with the same failure.
func (o Outcome) Same(want Outcome) bool {
	return o == want
}

// String says how the run ended, in a few words.
func (o Outcome) String() string {
	if o.Passed {
		return "passes"
	}
	return fmt.Sprintf("fails at step %q: %s", o.Step, o.Failure)
}

// Test runs each candidate once, several at a time if it likes, and returns
// their outcomes in order. An error stops Minimize, which keeps what it has.
type Test func(ctx context.Context, candidates []*v1alpha1.Scenario) ([]Outcome, error)

// Options says what Minimize may remove and how it runs. The zero value
// removes steps, set-up objects, node groups, nodes and fields, keeps
// refused writes, runs one candidate at a time and at most DefaultMaxRuns.
type Options struct {
	// Keep names steps that stay, whatever the runs say.
	Keep []string
	// DropRefusals lets refused writes (steps with an expectError) go
	// too, when the scenario still ends the same way without them.
	DropRefusals bool
	// NoFields leaves the bodies whole: only steps, set-up objects and
	// nodes are removed.
	NoFields bool
	// Batch is how many candidates one call of Test gets; the first of
	// them that ends the same way is taken, so the result does not depend
	// on which finished first. Zero: 1.
	Batch int
	// MaxRuns bounds the candidates run; once reached, Minimize stops and
	// returns the shortest scenario found. Zero: DefaultMaxRuns.
	MaxRuns int
	// Valid, when set, checks a candidate before it is run (simctl lint's
	// checks): a candidate it refuses (a step another one names removed)
	// is not run and does not end the same way.
	Valid func(*v1alpha1.Scenario) error
	// Progress, when set, is called after every call of Test.
	Progress func(Progress)
}

// Progress is where Minimize is.
type Progress struct {
	// Phase is what it is removing: steps, setup, nodes or fields.
	Phase string
	// Runs, Cached and Invalid count the candidates so far, as in Result.
	Runs, Cached, Invalid int
	// Steps is how many steps the shortest scenario found has.
	Steps int
}

// Result is the shortest scenario found and what it took.
type Result struct {
	// Scenario ends as the original does.
	Scenario *v1alpha1.Scenario
	// Want is how the original ended, in its first run.
	Want Outcome
	// Runs counts the candidates run (the original's first run included),
	// Cached those judged by an earlier run of the same candidate, Invalid
	// those Options.Valid refused, never run.
	Runs, Cached, Invalid int
	// Before and After count the original's and the result's parts.
	Before, After Size
	// FieldsRemoved counts the fields (and list items) taken out of the
	// bodies, a whole subtree counted once.
	FieldsRemoved int
	// Stopped says why Minimize stopped before it was done (MaxRuns
	// reached, the context ended, a Test error); "" when it was done. The
	// Scenario is then shorter than the original, not as short as it can
	// be.
	Stopped string
}

// Size counts the parts of a scenario Minimize removes.
type Size struct {
	Steps, Setup, NodeGroups, Nodes, Actors int
}

// SizeOf counts sc's parts.
func SizeOf(sc *v1alpha1.Scenario) Size {
	s := Size{Steps: len(sc.Spec.Steps), Setup: len(sc.Spec.Setup), NodeGroups: len(sc.Spec.Nodes), Actors: len(sc.Spec.Actors)}
	for _, g := range sc.Spec.Nodes {
		s.Nodes += g.Count
	}
	return s
}

// errStop ends the phases once MaxRuns candidates have run.
var errStop = errors.New("stopped")

// Minimize runs sc once to learn how it ends, then removes what it can
// while the candidates still end that way: steps, set-up objects, node
// groups, then nodes of the groups left, then (unless Options.NoFields)
// the fields of every body written, a subtree at a time from the top. sc is
// not changed. The error is the first run's, or the original's being
// skipped; a later error (the context's, a Test's) stops the search and is
// said in Result.Stopped.
func Minimize(ctx context.Context, sc *v1alpha1.Scenario, test Test, o Options) (*Result, error) {
	if o.Batch <= 0 {
		o.Batch = 1
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	m := &minimizer{test: test, o: o, cache: map[[32]byte]bool{}, cur: sc.Clone()}
	m.res.Before = SizeOf(sc)
	out, err := test(ctx, []*v1alpha1.Scenario{sc.Clone()})
	if err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("the test returned %d outcomes for 1 run", len(out))
	}
	m.res.Runs = 1
	m.want = out[0]
	m.res.Want = m.want
	m.cache[key(m.cur)] = true
	if !m.want.Passed {
		// The steps after the one it fails at never ran.
		if i := m.stepIndex(m.want.Step); i >= 0 {
			m.cur.Spec.Steps = m.cur.Spec.Steps[:i+1]
			dropUnusedActors(m.cur)
		}
	}
	phases := []func(context.Context) error{m.steps, m.setup, m.nodeGroups, m.nodeCounts}
	if !o.NoFields {
		phases = append(phases, m.fields)
	}
phases:
	for _, phase := range phases {
		if err := phase(ctx); err != nil {
			switch {
			case errors.Is(err, errStop):
				m.res.Stopped = fmt.Sprintf("reached --max-runs (%d runs)", o.MaxRuns)
			case ctx.Err() != nil:
				m.res.Stopped = "interrupted: " + ctx.Err().Error()
			default:
				m.res.Stopped = err.Error()
			}
			break phases
		}
	}
	m.res.Scenario = m.cur
	m.res.After = SizeOf(m.cur)
	return &m.res, nil
}

type minimizer struct {
	test  Test
	o     Options
	want  Outcome
	cache map[[32]byte]bool
	// cur is the shortest scenario found: every change made to it was a
	// candidate that ended as want.
	cur   *v1alpha1.Scenario
	phase string
	res   Result
}

func (m *minimizer) stepIndex(name string) int {
	return slices.IndexFunc(m.cur.Spec.Steps, func(st v1alpha1.Step) bool { return st.Name == name })
}

// first returns the index of the first candidate that ends as want, -1
// when none does. Candidates are judged in batches of Options.Batch, from
// the cache when the same candidate ran before.
func (m *minimizer) first(ctx context.Context, cands []*v1alpha1.Scenario) (int, error) {
	for start := 0; start < len(cands); start += m.o.Batch {
		batch := cands[start:min(start+m.o.Batch, len(cands))]
		same := make([]bool, len(batch))
		var run []*v1alpha1.Scenario
		var at []int
		for i, c := range batch {
			k := key(c)
			if ok, seen := m.cache[k]; seen {
				m.res.Cached++
				same[i] = ok
				continue
			}
			if m.o.Valid != nil {
				if err := m.o.Valid(c); err != nil {
					m.res.Invalid++
					m.cache[k] = false
					continue
				}
			}
			run = append(run, c)
			at = append(at, i)
		}
		// A batch larger than the runs left runs as many as are left,
		// then stops the search.
		last := false
		if left := m.o.MaxRuns - m.res.Runs; len(run) > left {
			run, at, last = run[:max(left, 0)], at[:max(left, 0)], true
		}
		if len(run) > 0 {
			if err := ctx.Err(); err != nil {
				return -1, err
			}
			out, err := m.test(ctx, run)
			if err != nil {
				return -1, err
			}
			if len(out) != len(run) {
				return -1, fmt.Errorf("the test returned %d outcomes for %d runs", len(out), len(run))
			}
			m.res.Runs += len(run)
			for j, oc := range out {
				same[at[j]] = oc.Same(m.want)
				m.cache[key(run[j])] = same[at[j]]
			}
			if m.o.Progress != nil {
				m.o.Progress(Progress{Phase: m.phase, Runs: m.res.Runs, Cached: m.res.Cached, Invalid: m.res.Invalid, Steps: len(m.cur.Spec.Steps)})
			}
		}
		if i := slices.Index(same, true); i >= 0 {
			return start + i, nil
		}
		if last {
			return -1, errStop
		}
	}
	return -1, nil
}

// ddmin returns the units (indices of what build keeps) of a smallest set
// found with which build's candidate still ends as want, removing chunks of
// units, halving the chunks when no chunk can go. build gets the units to
// keep, in order.
func (m *minimizer) ddmin(ctx context.Context, units []int, build func(keep []int) *v1alpha1.Scenario) ([]int, error) {
	c := slices.Clone(units)
	n := 2
	for len(c) > 0 {
		n = min(n, len(c))
		chunks := split(c, n)
		cands := make([]*v1alpha1.Scenario, len(chunks))
		rests := make([][]int, len(chunks))
		for i := range chunks {
			rests[i] = without(c, chunks[i])
			cands[i] = build(rests[i])
		}
		i, err := m.first(ctx, cands)
		if err != nil {
			return c, err
		}
		if i >= 0 {
			c = rests[i]
			m.cur = cands[i]
			n = max(n-1, 2)
			continue
		}
		if n == len(c) {
			break
		}
		n = min(2*n, len(c))
	}
	return c, nil
}

// split cuts c into n chunks of nearly equal length, in order.
func split(c []int, n int) [][]int {
	var out [][]int
	for i := range n {
		out = append(out, c[i*len(c)/n:(i+1)*len(c)/n])
	}
	return out
}

// without returns c less the units of chunk.
func without(c, chunk []int) []int {
	out := make([]int, 0, len(c)-len(chunk))
	for _, u := range c {
		if !slices.Contains(chunk, u) {
			out = append(out, u)
		}
	}
	return out
}

// key identifies a candidate: its JSON (maps' keys sorted), hashed.
func key(sc *v1alpha1.Scenario) [32]byte {
	data, err := json.Marshal(sc)
	if err != nil {
		panic(fmt.Sprintf("a scenario that does not marshal: %v", err))
	}
	return sha256.Sum256(data)
}

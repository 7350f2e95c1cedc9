package runner

import (
	"fmt"
	"strings"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// maxSeedsTried bounds the search for distinct orders: 5 writes have 120
// orders, which seeds cover in about 700 tries.
const maxSeedsTried = 100000

// Plan is one run of a scenario file. A scenario whose concurrent group
// explores interleavings has one Plan per explored order; any other
// scenario has one Plan.
type Plan struct {
	// File is the scenario.
	File *scenario.File
	// Interleaving is the order the group's writes are forced through; nil
	// for a scenario without interleavings.
	Interleaving *Interleaving
	// Shake is the seed of the delays of a shaken run; nil for a run that
	// is not shaken.
	Shake *ShakeRun
}

// ShakeRun is one shaken run of a plan (sim/shake).
type ShakeRun struct {
	// Seed gives the delays.
	Seed uint64
	// Index and Of say which of the plan's shaken runs this is, from 1.
	Index, Of int
}

// Name is the run's name in reports and specs: the scenario's, followed
// by the order and its seed for an explored interleaving, and by the
// shake's seed for a shaken run.
func (p Plan) Name() string {
	name := p.unshakenName()
	if p.Shake != nil {
		name += fmt.Sprintf(" [shake seed %d]", p.Shake.Seed)
	}
	return name
}

// unshakenName is the name of the run a shaken run shakes.
func (p Plan) unshakenName() string {
	name := p.File.Scenario.Metadata.Name
	if p.Interleaving != nil {
		name += " [" + p.Interleaving.Label() + "]"
	}
	return name
}

// Shaken expands each plan into one run per seed (sim/shake.Seeds), in
// order: plan 1 with every seed, then plan 2, ...
func Shaken(plans []Plan, seeds []uint64) []Plan {
	var out []Plan
	for _, p := range plans {
		for i, s := range seeds {
			q := p
			q.Shake = &ShakeRun{Seed: s, Index: i + 1, Of: len(seeds)}
			out = append(out, q)
		}
	}
	return out
}

// Interleaving is one order of a concurrent group's writes.
type Interleaving struct {
	// Step is the name of the concurrently step.
	Step string
	// Seed gives Order: OrderOf(Seed, len(Order)) == Order.
	Seed uint64
	// Order holds indexes into the group's writes, in send order.
	Order []int
	// Names are the writes' names, in send order.
	Names []string
	// Index and Of say which explored order this is: Index of Of, from 1.
	Index, Of int
}

// Label names the order and its seed, as reports and failures show them.
func (il *Interleaving) Label() string {
	return fmt.Sprintf("order %s, seed %d", strings.Join(il.Names, " > "), il.Seed)
}

// OrderOf returns the order of n writes that seed gives: a Fisher-Yates
// shuffle driven by SplitMix64. Both are written out here, not taken from
// math/rand, so that a seed names the same order in every build.
func OrderOf(seed uint64, n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	state := seed
	next := func() uint64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := n - 1; i > 0; i-- {
		j := int(next() % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// ExploredOrders returns the orders an interleavings group of n writes
// explores, each with its seed: the distinct orders of seeds Seed, Seed+1,
// ... in that sequence, until there are Orders.N of them, or every order for
// Orders.All.
func ExploredOrders(il *v1alpha1.Interleavings, n int) []Interleaving {
	want := il.Orders.N
	if il.Orders.All || want > v1alpha1.Permutations(n) {
		want = v1alpha1.Permutations(n)
	}
	var out []Interleaving
	seen := map[string]bool{}
	seed := il.Seed
	for tries := 0; len(out) < want && tries < maxSeedsTried; tries++ {
		order := OrderOf(seed, n)
		if key := fmt.Sprint(order); !seen[key] {
			seen[key] = true
			out = append(out, Interleaving{Seed: seed, Order: order})
		}
		seed++
	}
	return out
}

// interleaved returns the concurrently step of a scenario that explores
// interleavings, or nil.
func interleaved(sc *v1alpha1.Scenario) *v1alpha1.Step {
	for i := range sc.Spec.Steps {
		st := &sc.Spec.Steps[i]
		if st.Concurrently != nil && st.Concurrently.Interleavings != nil {
			return st
		}
	}
	return nil
}

// Plans expands files into runs: one per file, except that a scenario
// exploring interleavings gets one per explored order. With seed set, such a
// scenario gets one run instead, the order of that seed, to replay it.
func Plans(files []*scenario.File, seed *uint64) []Plan {
	var plans []Plan
	for _, f := range files {
		st := interleaved(f.Scenario)
		if st == nil {
			plans = append(plans, Plan{File: f})
			continue
		}
		n := len(st.Concurrently.Writes)
		orders := ExploredOrders(st.Concurrently.Interleavings, n)
		if seed != nil {
			orders = []Interleaving{{Seed: *seed, Order: OrderOf(*seed, n)}}
		}
		for i := range orders {
			il := orders[i]
			il.Step, il.Index, il.Of = st.Name, i+1, len(orders)
			for _, w := range il.Order {
				il.Names = append(il.Names, st.Concurrently.Writes[w].Name)
			}
			plans = append(plans, Plan{File: f, Interleaving: &il})
		}
	}
	return plans
}

// matches reports whether a case is about this order: its first write is
// sent first, and its order's writes are sent in that relative order.
func (il *Interleaving) matches(c *v1alpha1.InterleavingCase) bool {
	if c.First != "" && (len(il.Names) == 0 || il.Names[0] != c.First) {
		return false
	}
	pos := map[string]int{}
	for i, name := range il.Names {
		pos[name] = i
	}
	for i := 1; i < len(c.Order); i++ {
		if pos[c.Order[i-1]] > pos[c.Order[i]] {
			return false
		}
	}
	return true
}

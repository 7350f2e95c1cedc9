package minimize

import (
	"context"
	"slices"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// steps removes groups of steps: a write (or node, kubelet, release or
// concurrently step) with the expect-only steps just before it. A group
// stays when its step is the last, a refused write (unless DropRefusals)
// or named by Keep; the expect-only steps after the last write are the
// ending and stay.
func (m *minimizer) steps(ctx context.Context) error {
	m.phase = "steps"
	groups := m.stepGroups()
	base := m.cur.Clone()
	_, err := m.ddmin(ctx, indices(len(groups)), func(keep []int) *v1alpha1.Scenario {
		drop := map[int]bool{}
		for g, steps := range groups {
			if !slices.Contains(keep, g) {
				for _, i := range steps {
					drop[i] = true
				}
			}
		}
		c := base.Clone()
		steps := c.Spec.Steps
		c.Spec.Steps = nil
		for i, st := range steps {
			if !drop[i] {
				c.Spec.Steps = append(c.Spec.Steps, st)
			}
		}
		reachSinceKept(c, steps, drop)
		dropUnusedActors(c)
		return c
	})
	return err
}

// reachSinceKept points each reachedSince that names a dropped step at the
// kept step before it (none: the expectation's own step): the states then
// count from a little earlier, which holds whatever held before, where a
// reference to a step no longer there would not lint. An import names the
// write a status followed, which the writes a minimizer drops often are.
func reachSinceKept(c *v1alpha1.Scenario, steps []v1alpha1.Step, drop map[int]bool) {
	kept := map[string]string{} // a dropped step's name: the kept step before it
	last := ""
	for i, st := range steps {
		if drop[i] {
			kept[st.Name] = last
			continue
		}
		last = st.Name
	}
	for i := range c.Spec.Steps {
		e := c.Spec.Steps[i].Expect
		if e == nil {
			continue
		}
		for j := range e.Objects {
			if to, ok := kept[e.Objects[j].ReachedSince]; ok {
				e.Objects[j].ReachedSince = to
			}
		}
	}
}

// stepGroups returns the groups of step indices steps may remove.
func (m *minimizer) stepGroups() [][]int {
	steps := m.cur.Spec.Steps
	var groups [][]int
	var pending []int
	for i, st := range steps {
		pending = append(pending, i)
		if expectOnly(st) && i != len(steps)-1 {
			continue
		}
		fixed := i == len(steps)-1 || (refused(st) && !m.o.DropRefusals)
		for _, j := range pending {
			fixed = fixed || slices.Contains(m.o.Keep, steps[j].Name)
		}
		if !fixed {
			groups = append(groups, pending)
		}
		pending = nil
	}
	return groups
}

// expectOnly reports whether a step only expects (an assertion, or an
// imported scenario's wait for a component's work).
func expectOnly(st v1alpha1.Step) bool {
	return st.Actor == "" && st.Release == nil && st.Kubelet == nil && st.Node == nil && st.Concurrently == nil
}

// refused reports whether a step expects a refusal, or holds writes that
// do.
func refused(st v1alpha1.Step) bool {
	if st.ExpectError != nil {
		return true
	}
	if c := st.Concurrently; c != nil {
		if c.Outcomes != nil {
			return true
		}
		return slices.ContainsFunc(c.Writes, refused)
	}
	return false
}

// setup removes set-up objects.
func (m *minimizer) setup(ctx context.Context) error {
	return removeItems(ctx, m, "setup", func(sc *v1alpha1.Scenario) *[]v1alpha1.SetupObject { return &sc.Spec.Setup })
}

// nodeGroups removes node groups.
func (m *minimizer) nodeGroups(ctx context.Context) error {
	return removeItems(ctx, m, "nodes", func(sc *v1alpha1.Scenario) *[]v1alpha1.NodeGroup { return &sc.Spec.Nodes })
}

// removeItems removes items of the list items gives of a scenario.
func removeItems[T any](ctx context.Context, m *minimizer, phase string, items func(*v1alpha1.Scenario) *[]T) error {
	m.phase = phase
	base := m.cur.Clone()
	_, err := m.ddmin(ctx, indices(len(*items(base))), func(keep []int) *v1alpha1.Scenario {
		c := base.Clone()
		*items(c) = pick(*items(c), keep)
		return c
	})
	return err
}

// nodeCounts gives each node group left the fewest nodes of 1, 2, 4, ...
// with which the scenario ends the same way.
func (m *minimizer) nodeCounts(ctx context.Context) error {
	m.phase = "nodes"
	for g := range m.cur.Spec.Nodes {
		var cands []*v1alpha1.Scenario
		for n := 1; n < m.cur.Spec.Nodes[g].Count; n *= 2 {
			c := m.cur.Clone()
			c.Spec.Nodes[g].Count = n
			cands = append(cands, c)
		}
		i, err := m.first(ctx, cands)
		if err != nil {
			return err
		}
		if i >= 0 {
			m.cur = cands[i]
		}
	}
	return nil
}

// dropUnusedActors removes the actors no step or gate names.
func dropUnusedActors(sc *v1alpha1.Scenario) {
	used := map[string]bool{}
	var walk func(st v1alpha1.Step)
	walk = func(st v1alpha1.Step) {
		used[st.Actor] = true
		if c := st.Concurrently; c != nil {
			for _, w := range c.Writes {
				walk(w)
			}
		}
	}
	for _, st := range sc.Spec.Steps {
		walk(st)
	}
	for _, g := range sc.Spec.Gates {
		used[g.Actor] = true
	}
	sc.Spec.Actors = slices.DeleteFunc(sc.Spec.Actors, func(a v1alpha1.Actor) bool { return !used[a.Name] })
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pick returns the items of s at keep, in order.
func pick[T any](s []T, keep []int) []T {
	var out []T
	for _, i := range keep {
		out = append(out, s[i])
	}
	return out
}

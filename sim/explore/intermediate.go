package explore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/identity"
)

// Intermediate plans: a component crashed between two of its own writes,
// as the reference runs recorded them (Sieve's intermediate state). A gate
// holds the component's write that followed its k-th; once it is held, the
// component crashes (the held request is cut with its connection, and
// never lands), and starts again with empty caches: what it did up to its
// k-th write stands, what it was about to do next is lost, and it must
// find its way on from the state it left.

// Intermediate is the kind of an intermediate-state plan.
const Intermediate = "intermediate"

// IntermediateGate names the gate an intermediate plan adds.
const IntermediateGate = "explore-crash"

// IntermediateComponents are the components whose writes the reference
// runs record (to TrainJobs and JobSets) and that a plan can crash.
var IntermediateComponents = []string{identity.Kueue, identity.Trainer, identity.JobSet}

// Intermediates returns the intermediate-state plans of a scenario for
// the components given, from the changes its two reference runs recorded:
// for each write of a component to a TrainJob or a JobSet that follows
// another write of its own (its k-th, k from 1; the first write like it:
// the gate holds that one), when the other reference run has the two in
// that order. Pairs that change the same fields are one plan. A
// component one of the scenario's views sees, or that a gate of the
// scenario holds, gets none, nor does a write a webhook's hold holds: a
// restart lists anew, which undoes a view, and a gate of the scenario's
// would hold what the plan's gate holds, the request the crash cuts.
func Intermediates(sc *v1alpha1.Scenario, a, b []results.ObjectChange, components []string) []Plan {
	if !Flippable(sc) {
		return nil
	}
	stepIndex := stepIndexOf(sc)
	seen := map[string]bool{}
	var out []Plan
	for _, c := range components {
		if !slices.Contains(IntermediateComponents, c) ||
			slices.ContainsFunc(sc.Spec.Views, func(v v1alpha1.View) bool { return v.Component == c }) ||
			slices.ContainsFunc(sc.Spec.Gates, func(g v1alpha1.Gate) bool { return g.Component == c }) {
			continue
		}
		var after *FlipWrite
		for i, ch := range a {
			if ch.Actor || ch.Writer != c {
				continue
			}
			w, ok := flipWrite(ch, stepIndex)
			if !ok {
				continue
			}
			first := !slices.ContainsFunc(a[:i], func(o results.ObjectChange) bool { return like(o, w) })
			if after != nil && first && !heldByHold(sc, w) && inOrder(b, *after, w) {
				key := c + " " + writeKey(after) + " / " + writeKey(&w)
				if !seen[key] {
					seen[key] = true
					held, prev := w, *after
					out = append(out, Plan{Scenario: sc.Metadata.Name, Kind: Intermediate, Component: c, Step: w.Step,
						StepName: sc.Spec.Steps[w.Step].Name, Write: w.Verb + " " + w.Resource, Held: &held, After: &prev})
				}
			}
			after = &w
		}
	}
	return out
}

// heldByHold reports whether a scenario webhook's hold of unsuspends
// (served as a gate of anybody's) holds the write w: the crash would cut
// the request the scenario's own steps wait on.
func heldByHold(sc *v1alpha1.Scenario, w FlipWrite) bool {
	unsuspends := w.Resource == "trainjobs" && slices.Contains(w.Fields, "spec.suspend")
	return unsuspends && slices.ContainsFunc(sc.Spec.Webhooks, func(h v1alpha1.AdmissionWebhook) bool {
		return h.Hold != nil && h.Hold.Requests == v1alpha1.HoldUnsuspend
	})
}

// writeKey is what tells two writes apart when plans are merged: the
// resource and the leaves changed.
func writeKey(w *FlipWrite) string {
	return w.Resource + " " + strings.Join(w.Fields, ",")
}

// Intermediate's steps, by name.
func (p Plan) intermediateHeldStep() string {
	return StepPrefix + p.Component + "'s write after its " + p.After.Verb + " of " + p.After.Resource + " is held"
}

func (p Plan) intermediateCrashStep() string {
	return StepPrefix + p.Component + " crashes with its write held"
}

func (p Plan) intermediateStartStep() string {
	return StepPrefix + p.Component + " starts again"
}

// intermediateSteps returns the steps of an intermediate plan's scenario,
// out a copy of the scenario whose steps are steps, with its gate in: the
// held write's step runs without its expectations; a step waits (30 s at
// most) until the gate holds the component's write; the component
// crashes (the step ends once the API server has stopped waiting for the
// held request: the runner's crash waits for it) and the gate opens; the
// component starts again; then the step's expectations follow as a step of
// their own. A held write's step that only waited keeps its name and
// comes after the start.
func (p Plan) intermediateSteps(out *v1alpha1.Scenario, action func(name, act string) v1alpha1.Step) []v1alpha1.Step {
	g := p.Held.heldGate(IntermediateGate)
	g.Until = p.intermediateCrashStep()
	out.Spec.Gates = append(out.Spec.Gates, g)
	steps := out.Spec.Steps
	st := steps[p.Step]
	held := v1alpha1.Step{Name: p.intermediateHeldStep(), Expect: &v1alpha1.Expect{
		Within: v1alpha1.Duration{Duration: flipWithin},
		Held:   []v1alpha1.HeldExpectation{{Gate: IntermediateGate}},
	}}
	crash := []v1alpha1.Step{held,
		action(p.intermediateCrashStep(), v1alpha1.ComponentCrash),
		action(p.intermediateStartStep(), v1alpha1.ComponentStart)}
	next := slices.Clone(steps[:p.Step])
	if _, acts := v1alpha1.VerbOf(&st); !acts {
		// It only waited: the crash comes before it, and a view that
		// started before it starts before the wait.
		retargetFrom(out, st.Name, held.Name)
		next = append(next, crash...)
		next = append(next, st)
		return append(next, steps[p.Step+1:]...)
	}
	later := expectationsLater(out, st.Name, st.Expect)
	st.Expect = nil
	next = append(next, st)
	next = append(next, crash...)
	next = append(next, later...)
	return append(next, steps[p.Step+1:]...)
}

// intermediateString says what an intermediate plan does.
func (p Plan) intermediateString() string {
	return fmt.Sprintf("%s crashes after %s, in step %d, with its next write, %s, held", p.Component, p.After, p.After.Step+1, p.Held)
}

package explore

import (
	"slices"
	"time"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Coalesce plans: a component that never observes a state between two
// changes by others to one TrainJob. A view shows the component that
// TrainJob's changes from the first change's step on, coalesced: it sees
// the object as it was, then, once the second change has landed, as it is
// after both, as a component whose watch fell behind (or that was busy)
// sees it. What it wrote next, in the reference, it writes from that state.
// Sieve calls it an unobserved state.

// Coalesce is the kind of an unobserved-state plan.
const Coalesce = "coalesce"

// CoalesceView names the view a coalesce plan adds.
const CoalesceView = "explore-coalesce"

// coalesceWithin bounds the wait for the second change while the
// component sees neither: one that waits on the component's reaction to
// the first never comes, and the plan is not carried out.
const coalesceWithin = 30 * time.Second

// CoalesceComponents are the components whose TrainJob watches a coalesce
// plan holds: those that write TrainJobs (Kueue, the Trainer).
var CoalesceComponents = []string{"kueue", "trainer"}

// Coalesces returns the coalesce plans of a scenario from the changes its
// two reference runs recorded: for each write of a component to a
// TrainJob (not its create; the first write like it), the last two
// changes to that TrainJob by other writers before it, since the
// component's write to it before (so that it had seen the state before
// the first), when the other reference run has the three in that order.
// Triples that change the same fields are one plan. A component one of
// the scenario's views sees gets none.
func Coalesces(sc *v1alpha1.Scenario, a, b []results.ObjectChange) []Plan {
	if !Flippable(sc) {
		return nil
	}
	stepIndex := stepIndexOf(sc)
	seen := map[string]bool{}
	var out []Plan
	for i, c := range a {
		if c.Kind != "TrainJob" || c.Actor || c.Verb == "create" || !slices.Contains(CoalesceComponents, c.Writer) ||
			slices.ContainsFunc(sc.Spec.Views, func(v v1alpha1.View) bool { return v.Component == c.Writer }) {
			continue
		}
		before, ok := flipWrite(c, stepIndex)
		if !ok || slices.ContainsFunc(a[:i], func(o results.ObjectChange) bool { return like(o, before) }) {
			continue
		}
		var others []FlipWrite
		for j := i - 1; j >= 0 && len(others) < 2; j-- {
			o := a[j]
			if o.Kind != c.Kind || o.Name != c.Name {
				continue
			}
			if o.Writer == c.Writer && !o.Actor {
				break // the component's own write: it saw the state before
			}
			w, ok := flipWrite(o, stepIndex)
			if !ok {
				break // a change in the set-up: before the steps
			}
			others = append(others, w)
		}
		if len(others) < 2 {
			continue
		}
		first, second := others[1], others[0]
		key := before.Writer + " " + before.Field + " / " + first.Writer + " " + first.Field + " / " + second.Writer + " " + second.Field
		if seen[key] || !inOrder(b, first, second) || !inOrder(b, second, before) {
			continue
		}
		seen[key] = true
		out = append(out, Plan{Scenario: sc.Metadata.Name, Kind: Coalesce, Component: before.Writer, Step: first.Step, StepName: sc.Spec.Steps[first.Step].Name,
			Write: before.Verb + " " + before.Resource, Held: &before, Coalesced: []*FlipWrite{&first, &second}})
	}
	return out
}

// coalesceWaitStep and coalesceReleaseStep name the steps a coalesce plan
// adds.
func (p Plan) coalesceWaitStep() string {
	return StepPrefix + p.Coalesced[1].who() + "'s write lands while " + p.Component + " has seen neither"
}

func (p Plan) coalesceReleaseStep() string {
	first, second := p.Coalesced[0].who(), p.Coalesced[1].who()
	if first == second {
		return StepPrefix + p.Component + " sees " + first + "'s two writes as one"
	}
	return StepPrefix + p.Component + " sees " + first + "'s and " + second + "'s writes as one"
}

// applyCoalesce puts the plan's view and steps into out, a copy of the
// scenario: the view holds the component's events of the TrainJob from
// the first change's step. The steps up to the second change's run as
// written (the reference runs showed the component writes nothing to the
// TrainJob meanwhile; a step that waits on another reaction of it fails
// before the release, and the plan is not carried out). The second
// change's step runs without its expectations; a step waits until the
// second change has landed with the view holding (its name, when the step
// only waited), a step releases the view, and the step's expectations
// follow as a step of their own, its objects as reached since the step.
func (p Plan) applyCoalesce(out *v1alpha1.Scenario) {
	first, second := p.Coalesced[0], p.Coalesced[1]
	out.Spec.Views = append(out.Spec.Views, v1alpha1.View{Name: CoalesceView, Component: p.Component, Resource: "trainjobs", ObjectName: first.Name, Coalesce: true, From: out.Spec.Steps[first.Step].Name})
	var next []v1alpha1.Step
	for i, st := range out.Spec.Steps {
		if i != second.Step {
			next = append(next, st)
			continue
		}
		var moved v1alpha1.Expect
		if st.Expect != nil {
			moved = *st.Expect
			st.Expect = nil
		}
		waitName := p.coalesceWaitStep()
		if _, acts := v1alpha1.VerbOf(&st); acts || st.Release != nil || st.Concurrently != nil {
			next = append(next, st)
		} else {
			waitName = st.Name // the step only waited: the wait stands in it
		}
		if !second.Actor {
			next = append(next, v1alpha1.Step{Name: waitName, Expect: &v1alpha1.Expect{
				Within:  v1alpha1.Duration{Duration: coalesceWithin},
				Held:    []v1alpha1.HeldExpectation{{View: CoalesceView}},
				Objects: []v1alpha1.ObjectExpectation{landed(second)},
				Holding: moved.Holding, // a webhook's hold ends with this step, before the release
			}})
		}
		next = append(next, v1alpha1.Step{Name: p.coalesceReleaseStep(), Release: &v1alpha1.Release{View: CoalesceView}})
		// A held gate's requests may have gone on meanwhile.
		moved.Held, moved.Holding = nil, ""
		for k := range moved.Objects {
			moved.Objects[k].Reached, moved.Objects[k].ReachedSince = true, st.Name
		}
		later := expectationsLater(out, st.Name, emptyToNil(&moved))
		if later == nil {
			retargetUntil(out, st.Name, p.coalesceReleaseStep())
		}
		next = append(next, later...)
	}
	out.Spec.Steps = next
}

// coalesceKey is what a coalesce plan's ID ends with: its three writes.
func (p Plan) coalesceKey() string {
	return flipKey(p.Held, p.Coalesced[0], p.Coalesced[1])
}

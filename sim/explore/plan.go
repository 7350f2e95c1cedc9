// Package explore derives, from a scenario that passes, the scenarios that
// put one component in a corner a controller bug lives in (restarted with
// an empty cache between two steps, or onto a list from before a step's
// write, or down while a write lands), and
// judges what they end with against the scenario's own expectations and
// against what the scenario ends with as written. A plan is a scenario:
// what explore runs is what a finding replays, with simctl run.
package explore

import (
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/view"
)

// Kinds of plan.
const (
	// Restart: the component restarts (a crash, then a start: its caches
	// empty, it lists everything anew) right after a step, before the
	// next one: the events of what the others did meanwhile reach it only
	// through its relist.
	Restart = "restart"
	// Down: the component is crashed just before a step's write and
	// started again once the write is answered, before the step's
	// expectations: the write lands while it is down (its webhooks fail
	// closed, as a cluster's would), and it learns of the write from its
	// relist.
	Down = "down"
	// Stale: the component restarts right after a step, as Restart, and
	// its list of the step's object's resource is served as of before the
	// step's write (an API server whose watch cache lags): it starts on
	// the state from before the write, and the events since reach it once
	// it is up (a time travel, as Sieve calls it).
	Stale = "stale"
)

// Kinds are the kinds of plan: those Plans gives for one component and
// step, in its order, and Flip, Coalesce and Intermediate, which Flips,
// Coalesces and Intermediates give from the reference runs.
var Kinds = []string{Restart, Down, Stale, Flip, Coalesce, Intermediate}

// DefaultKinds are the kinds explore runs unless told, and those Plans
// makes from a scenario as written: Flip plans each take their component
// (one worker) to themselves, and run one at a time.
var DefaultKinds = []string{Restart, Down, Stale}

// StepPrefix begins the name of each step a plan adds: a component's crash,
// start or restart, never an expectation.
const StepPrefix = "explore: "

// PlanAnnotation, on a plan's scenario, is the plan's ID: a finding kept in
// the corpus (scenarios/found/) is known by it to later explores.
const PlanAnnotation = "trainersim.dev/explore-plan"

// Plan is one change to a scenario: a component crashed and started again
// around one of its steps.
type Plan struct {
	// Scenario is the explored scenario's metadata.name.
	Scenario string
	// Kind is one of Kinds.
	Kind string
	// Component is the component crashed: a name of a component step.
	Component string
	// Step is the index of the step the plan is placed at (after it for
	// Restart, around its write for Down) in the explored scenario.
	Step int
	// StepName is that step's name.
	StepName string
	// Write is what the step writes, "verb Kind" (create TrainJob):
	// down plans of one component and write are one test of its
	// webhooks (Down).
	Write string
	// Resource is the plural resource of the step's object, which a
	// Stale plan's component lists stale.
	Resource string
	// Held and Until are a Flip plan's writes: Held, Component's, is held
	// until Until has landed. Also, when set, is held with it: the JobSet
	// controller's status write to the JobSet of Held's TrainJob. For a
	// Coalesce plan, Held is Component's write that Coalesced, two
	// changes of others to its TrainJob, preceded: Component sees them as
	// one.
	// For an Intermediate plan, Held is Component's write that is held
	// when it crashes, After its write before it, the last that lands.
	Held, Until, Also, After *FlipWrite
	Coalesced                []*FlipWrite
}

// ID names the plan in reports and file names: scenario, kind, component
// and the step's number (from 1).
func (p Plan) ID() string {
	if p.Kind == Flip {
		return fmt.Sprintf("%s--flip-%s-step-%d-%s", p.Scenario, p.Component, p.Step+1, flipKey(p.Held, p.Until, p.Also))
	}
	if p.Kind == Coalesce && p.Held != nil {
		return fmt.Sprintf("%s--coalesce-%s-step-%d-%s", p.Scenario, p.Component, p.Step+1, p.coalesceKey())
	}
	if p.Kind == Intermediate && p.Held != nil {
		return fmt.Sprintf("%s--intermediate-%s-step-%d-%s", p.Scenario, p.Component, p.Step+1, flipKey(p.After, p.Held, nil))
	}
	return fmt.Sprintf("%s--%s-%s-step-%d", p.Scenario, p.Kind, p.Component, p.Step+1)
}

// String says what the plan does, one line.
func (p Plan) String() string {
	switch p.Kind {
	case Restart:
		return fmt.Sprintf("%s restarts after step %d (%q)", p.Component, p.Step+1, p.StepName)
	case Flip:
		if p.Also != nil {
			return fmt.Sprintf("%s, in step %d, and %s after it are held until %s, in step %d, has landed", p.Held, p.Held.Step+1, p.Also, p.Until, p.Until.Step+1)
		}
		return fmt.Sprintf("%s, in step %d, is held until %s, in step %d, has landed", p.Held, p.Held.Step+1, p.Until, p.Until.Step+1)
	case Stale:
		return fmt.Sprintf("%s restarts after step %d (%q) and lists %s as they were before its write", p.Component, p.Step+1, p.StepName, p.Resource)
	case Intermediate:
		return p.intermediateString()
	case Coalesce:
		return fmt.Sprintf("%s sees %s, in step %d, and %s, in step %d, as one change before %s", p.Component, p.Coalesced[0], p.Coalesced[0].Step+1, p.Coalesced[1], p.Coalesced[1].Step+1, p.Held)
	default:
		return fmt.Sprintf("%s is down while step %d (%q) writes", p.Component, p.Step+1, p.StepName)
	}
}

// componentRank orders the components plans crash first: the managers
// that own runtimePatches entries and act on them (Kueue, then the
// Trainer, whose reconciles merge the entries into the JobSet), then
// JobSet, then the Kubernetes components, each of whose steps has the
// cluster to itself (its plans run one at a time).
var componentRank = []string{identity.Kueue, identity.Trainer, identity.JobSet, identity.ControllerManager, identity.Scheduler, identity.Kwok}

// Components returns the components a scenario's plans can crash, in the
// order plans take them: Kueue when spec.components has it, the Trainer
// and JobSet (in simctl's process: envtest only), and kube-controller-manager,
// kube-scheduler and KWOK when withCluster (their steps take the cluster to
// themselves).
func Components(sc *v1alpha1.Scenario, withCluster bool) []string {
	var out []string
	for _, c := range componentRank {
		switch c {
		case identity.Kueue:
			if !slices.Contains(sc.Spec.Components, identity.Kueue) {
				continue
			}
		case identity.ControllerManager, identity.Scheduler, identity.Kwok:
			if !withCluster {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// Plans returns the plans of a scenario for the components given, in the
// order of value: for each write step (a create, apply, patch, update,
// delete or concurrently group; not a step that already acts on a
// component, node or kubelet), each component, each kind. A scenario with a
// component step or an upgrade states its own lifecycle and gets none: a
// crash of another step's component would test the plan, not the
// scenario; nor does a component one of its views sees, nor a scenario
// that explores the interleavings of a concurrently group (it runs
// several orders already, each a run of its own).
func Plans(sc *v1alpha1.Scenario, components []string) []Plan {
	steps := sc.Spec.Steps
	for i := range steps {
		if steps[i].Component != nil {
			return nil
		}
		if c := steps[i].Concurrently; c != nil && c.Interleavings != nil {
			return nil // it runs several orders already, one result each
		}
	}
	// A component whose watches a view of the scenario holds is left
	// alone: its restart lists anew, which undoes what the view states.
	components = slices.DeleteFunc(slices.Clone(components), func(c string) bool {
		return slices.ContainsFunc(sc.Spec.Views, func(v v1alpha1.View) bool { return v.Component == c })
	})
	var out []Plan
	for i := range steps {
		if !explorable(&steps[i]) {
			continue
		}
		for _, c := range components {
			for _, k := range DefaultKinds {
				p := Plan{Scenario: sc.Metadata.Name, Kind: k, Component: c, Step: i, StepName: steps[i].Name, Write: writeOf(&steps[i])}
				switch k {
				case Restart, Stale:
					if i == len(steps)-1 {
						continue // nothing after it would see the restart
					}
				}
				if k == Stale {
					if steps[i].Trainer != nil {
						continue // the view's from must be a step every release runs
					}
					// Only of what the component lists: a resource it
					// watches.
					p.Resource = resourceOf(&steps[i])
					if _, ok := view.WatchedResource(c, p.Resource); !ok {
						continue
					}
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// explorable reports whether a step is a write of an actor's: what plans
// are placed around.
func explorable(st *v1alpha1.Step) bool {
	v, ok := v1alpha1.VerbOf(st)
	if !ok || !v.Write {
		return false
	}
	switch v.Name {
	case v1alpha1.VerbKubelet, v1alpha1.VerbNode, v1alpha1.VerbComponent:
		return false
	}
	return true
}

// writeOf says what a write step writes: its verb and the object's kind.
func writeOf(st *v1alpha1.Step) string {
	v, _ := v1alpha1.VerbOf(st)
	return strings.TrimSpace(v.Name + " " + kindOf(st))
}

// resourceOf is the plural resource of a write step's object (its kind's,
// lower case, with an s: every kind a scenario writes), "" when the step
// names no kind.
func resourceOf(st *v1alpha1.Step) string {
	kind := kindOf(st)
	if kind == "" || strings.Contains(kind, " ") {
		return ""
	}
	return strings.ToLower(kind) + "s"
}

// kindOf is the kind of a write step's object.
func kindOf(st *v1alpha1.Step) string {
	kind := ""
	switch {
	case st.Create != nil:
		kind, _ = st.Create["kind"].(string)
	case st.Apply != nil:
		kind, _ = st.Apply["kind"].(string)
	case st.Patch != nil:
		kind = st.Patch.Target.Kind
	case st.Delete != nil:
		kind = st.Delete.Kind
	case st.Update != nil && st.Update.Object != nil:
		kind, _ = st.Update.Object["kind"].(string)
	case st.Update != nil:
		kind = "the object of " + st.Update.From
	}
	return kind
}

// Viewed returns the components the plans' views see (a Stale plan's
// list, a Coalesce plan's TrainJob events): the cluster must stand between
// them and the API server.
func Viewed(plans []Plan) []string {
	var out []string
	for _, p := range plans {
		if (p.Kind == Stale || p.Kind == Coalesce) && !slices.Contains(out, p.Component) {
			out = append(out, p.Component)
		}
	}
	return out
}

// Refused returns plans without the down plans of each component and write
// that a run refused while the component was down (refused: "component
// write" of Plan.Write): its webhook fails closed on that write, whichever
// scenario sends it, and the plans left would test that again.
func Refused(plans []Plan, refused map[string]bool) []Plan {
	return slices.DeleteFunc(plans, func(p Plan) bool { return p.Kind == Down && refused[p.Component+" "+p.Write] })
}

// Apply returns the scenario the plan runs: a copy of sc with its
// component steps in, named "explore: ...", and its name and description
// saying what was changed.
func (p Plan) Apply(sc *v1alpha1.Scenario) *v1alpha1.Scenario {
	out := sc.Clone()
	suffix := fmt.Sprintf("-%d", p.Step+1)
	switch p.Kind {
	case Flip:
		suffix += "-" + flipKey(p.Held, p.Until, p.Also)
	case Coalesce:
		suffix += "-" + p.coalesceKey()
	case Intermediate:
		suffix += "-" + flipKey(p.After, p.Held, nil)
	}
	out.Metadata.Name = planName(sc.Metadata.Name, "-"+p.Kind+"-"+p.Component+suffix)
	if out.Metadata.Annotations == nil {
		out.Metadata.Annotations = map[string]string{}
	}
	out.Metadata.Annotations[PlanAnnotation] = p.ID()
	out.Spec.Description = fmt.Sprintf("Explored by simctl explore from %s: %s.\n\n%s", sc.Metadata.Name, p, sc.Spec.Description)
	if p.Kind == Flip {
		// A gate, which every cluster simctl starts serves.
		p.applyFlip(out)
		return out
	}
	if c := out.Spec.Clusters; c == nil || !slices.Equal(c.Only, []string{"envtest"}) {
		out.Spec.Clusters = &v1alpha1.Clusters{Only: []string{"envtest"}, Reason: "its component steps act on what simctl runs itself, which only envtest does"}
	}
	if p.Kind == Coalesce {
		out.Spec.Clusters.Reason = "its view is served in simctl's process, where only envtest runs the components"
		p.applyCoalesce(out)
		return out
	}
	action := func(name, act string) v1alpha1.Step {
		return v1alpha1.Step{Name: name, Component: &v1alpha1.ComponentAction{Name: p.Component, Action: act}}
	}
	steps := out.Spec.Steps
	var next []v1alpha1.Step
	switch p.Kind {
	case Restart:
		next = append(next, steps[:p.Step+1]...)
		next = append(next, action(StepPrefix+p.Component+" restarts", v1alpha1.ComponentRestart))
		next = append(next, steps[p.Step+1:]...)
	case Stale:
		restart := StepPrefix + p.Component + " restarts and lists " + p.Resource + " as before step " + fmt.Sprint(p.Step+1)
		next = append(next, steps[:p.Step+1]...)
		next = append(next, action(restart, v1alpha1.ComponentRestart))
		next = append(next, steps[p.Step+1:]...)
		// Served as of the cluster's resourceVersion when the step
		// began; what came since is held until the component is up.
		out.Spec.Views = append(out.Spec.Views, v1alpha1.View{
			Name: "explore-stale-" + p.Resource, Component: p.Component, Resource: p.Resource,
			StaleList: true, From: steps[p.Step].Name, Until: restart,
		})
	case Intermediate:
		next = p.intermediateSteps(out, action)
	case Down:
		// The write's expectations, once the component is up again.
		write := steps[p.Step]
		later := expectationsLater(out, write.Name, write.Expect)
		write.Expect = nil
		next = append(next, steps[:p.Step]...)
		next = append(next, action(StepPrefix+p.Component+" crashes", v1alpha1.ComponentCrash), write,
			action(StepPrefix+p.Component+" starts again", v1alpha1.ComponentStart))
		next = append(next, later...)
		next = append(next, steps[p.Step+1:]...)
	}
	out.Spec.Steps = next
	return out
}

// planName is the name of a plan's scenario: the explored scenario's, then
// what the plan does (suffix), within a label value's 63 characters (runs
// name namespaces after it): the scenario's name is cut at its end, the
// plan's part kept whole.
func planName(scenario, suffix string) string {
	const max = 63
	if len(scenario)+len(suffix) > max {
		scenario = strings.TrimRight(scenario[:max-len(suffix)], "-")
	}
	return scenario + suffix
}

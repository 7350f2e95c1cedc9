package explore

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// EndState is what a run ended with, as the oracle compares it: the
// namespace's Pods (their names' generated suffixes masked: phase, node
// profile and the reason they are unscheduled) and the owners of every runtimePatches
// entry, by key.
type EndState map[string]string

// generatedSuffix is the random suffix the API server gives a name from
// generateName (a Job's Pods): five characters of [bcdfghjklmnpqrstvwxz2-9].
var generatedSuffix = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2-9]{5}$`)

// EndStateOf returns the end state of a run.
func EndStateOf(sc results.Scenario) EndState {
	out := EndState{}
	byName := map[string][]string{}
	for _, p := range sc.FinalPods {
		name := generatedSuffix.ReplaceAllString(p.Name, "-*")
		// Why unscheduled, by its reason only: the message counts the
		// nodes of the whole cluster, every other run's included.
		reason, _, _ := strings.Cut(strings.Trim(p.Scheduling, "()"), ":")
		byName[name] = append(byName[name], strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Phase, p.NodeProfile, reason)))
	}
	for name, states := range byName {
		sort.Strings(states)
		for i, s := range states {
			key := "pod " + name
			if i > 0 {
				key = fmt.Sprintf("%s #%d", key, i+1)
			}
			out[key] = s
		}
	}
	for _, o := range sc.FinalOwners {
		out[fmt.Sprintf("%s%s entry %s", ownersPrefix, o.TrainJob, o.Entry)] = strings.Join(o.Managers, ", ")
	}
	for _, tj := range sc.FinalTrainJobs {
		out["trainjob "+tj.Name+" suspended"] = fmt.Sprint(tj.Suspended)
		out["trainjob "+tj.Name+" conditions"] = strings.Join(trueConditions(tj.Conditions), ", ")
		// An invariant, which needs no reference: a suspended TrainJob
		// has no running Pods. Compared as the other keys: a scenario
		// whose reference breaks it states that it does.
		if tj.Suspended && slices.ContainsFunc(sc.FinalPods, func(p results.Pod) bool { return p.JobSet == tj.Name && p.Phase == "Running" }) {
			out["invariant: suspended trainjob "+tj.Name+" has no running Pods"] = "broken"
		}
		// Another: the JobSet the Trainer applies now (the TrainJob or
		// the JobSet suspended) holds what it builds from the TrainJob,
		// what simctl explain shows (runner.Runner.CheckJobSets).
		if len(tj.JobSetBehind) > 0 {
			out["invariant: jobset "+tj.Name+" holds what the Trainer builds"] = "broken, behind in " + strings.Join(tj.JobSetBehind, ", ")
		}
	}
	if sc.Unsettled != "" {
		out["namespace settles"] = "no: " + sc.Unsettled
	}
	return out
}

// trueConditions returns the conditions ("Type=Status Reason") whose
// status is True, as "Type Reason": a False one records history (the
// Trainer sets Suspended=False Resumed only on a resume it saw, so a job
// suspended and resumed while it was restarting has none, as one never
// suspended), not the TrainJob's state.
func trueConditions(conds []string) []string {
	var out []string
	for _, c := range conds {
		if typ, rest, ok := strings.Cut(c, "=True"); ok {
			out = append(out, typ+rest)
		}
	}
	return out
}

// Noise returns the keys whose value differs between two end states of
// the same scenario (one of them lacking it included): what the oracle
// masks, since the scenario as written does not decide it.
func Noise(a, b EndState) map[string]bool {
	out := map[string]bool{}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out[k] = true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out[k] = true
		}
	}
	return out
}

// Races returns the noise of what a scenario leaves to a race it states:
// with a concurrently group (writes released together, the API server
// deciding their order), who ends up owning each runtimePatches entry is
// the race's winner's doing, whichever the two reference runs agreed on.
func Races(sc *v1alpha1.Scenario, noise map[string]bool) map[string]bool {
	if !slices.ContainsFunc(sc.Spec.Steps, func(st v1alpha1.Step) bool { return st.Concurrently != nil }) {
		return noise
	}
	out := maps.Clone(noise)
	out[ownersPrefix+"*"] = true
	return out
}

// ownersPrefix begins the end state's keys of entries' owners.
const ownersPrefix = "owners of "

// masked reports whether noise masks a key: the key itself, or a prefix of
// it followed by "*".
func masked(noise map[string]bool, key string) bool {
	if noise[key] {
		return true
	}
	for k := range noise {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Difference is one key of the end state that differs from the
// reference's.
type Difference struct {
	Key string `json:"key"`
	// Want is the reference's value, Got the plan's; empty when absent.
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s, the scenario as written: %s", d.Key, orNone(d.Got), orNone(d.Want))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Compare returns the keys of got that differ from want, but those noise
// masks, sorted by key.
func Compare(want, got EndState, noise map[string]bool) []Difference {
	var out []Difference
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	for k := range keys {
		if masked(noise, k) || want[k] == got[k] {
			continue
		}
		out = append(out, Difference{Key: k, Want: want[k], Got: got[k]})
	}
	slices.SortFunc(out, func(a, b Difference) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Verdicts of a plan's run.
const (
	// Same: the plan's run passed and ended as the scenario does.
	Same = "same"
	// Closed: the write of a Down plan was refused while the component
	// was down, by its webhook failing closed, as a cluster refuses it:
	// what the plan asks for, not a finding. Also a crash's run that
	// failed on a request so refused (a step's expect.requests).
	Closed = "refused-while-down"
	// NotCarriedOut: a step of the plan's own (a component's crash or
	// start) failed: the run says nothing of the scenario.
	NotCarriedOut = "plan-not-carried-out"
	// Found: the plan's run failed an expectation of the scenario, or
	// ended otherwise than the scenario as written.
	Found = "found"
)

// Verdict is what the oracle says of a plan's run.
type Verdict struct {
	Kind string `json:"kind"`
	// FailedStep and Failure are the step the run failed at and why.
	FailedStep string `json:"failedStep,omitempty"`
	Failure    string `json:"failure,omitempty"`
	// Differences are the end state's, when the run passed.
	Differences []Difference `json:"differences,omitempty"`
}

// Signature identifies a finding across runs of its plan: the step it
// failed at, or the keys and values that differed.
func (v Verdict) Signature() string {
	if v.FailedStep != "" {
		return "failed at " + v.FailedStep
	}
	var parts []string
	for _, d := range v.Differences {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "; ")
}

// Judge returns the verdict of a plan's run against the scenario's
// reference end state and its noise.
func Judge(p Plan, want EndState, noise map[string]bool, got results.Scenario) Verdict {
	if v, ok := p.flipHoldAbandoned(got); ok {
		return v
	}
	if !got.Passed {
		step, failure := FailedStep(got)
		if p.Kind == Down && step == p.StepName && refusedByWebhook(failure) {
			return Verdict{Kind: Closed, FailedStep: step, Failure: failure}
		}
		if (p.Kind == Restart || p.Kind == Stale || p.Kind == Intermediate) && refusedByWebhook(failure) {
			// An expectation of another writer's requests that failed
			// on one the crashed component's webhook refused while it
			// was down: the API server fails closed, as a cluster's
			// does, and the requests the step expects never came.
			return Verdict{Kind: Closed, FailedStep: step, Failure: failure}
		}
		if strings.HasPrefix(step, StepPrefix) {
			return Verdict{Kind: NotCarriedOut, FailedStep: step, Failure: failure}
		}
		if p.Kind == Coalesce && !passed(got, p.coalesceReleaseStep()) {
			// Failed while the component saw neither change: a step
			// before the second may wait on another reaction of it.
			return Verdict{Kind: NotCarriedOut, FailedStep: step, Failure: failure}
		}
		if p.Kind == Flip && p.conflictsWithHeld(got, step) {
			// The held write landed between an actor's read and its
			// write, which carries the resourceVersion it read: a
			// conflict by construction, which the actor as written
			// does not retry, where the manager it stands for would.
			return Verdict{Kind: NotCarriedOut, FailedStep: step, Failure: failure}
		}
		if p.Kind == Flip && !passed(got, p.lastFlipRelease()) {
			// Failed while the first write was held: the steps before
			// the second write may wait on what the held component would
			// have done meanwhile (one worker, blocked on the held
			// request), so the order could not be run to the end.
			return Verdict{Kind: NotCarriedOut, FailedStep: step, Failure: failure}
		}
		return Verdict{Kind: Found, FailedStep: step, Failure: failure}
	}
	if d := Compare(want, EndStateOf(got), noise); len(d) > 0 {
		return Verdict{Kind: Found, Differences: d}
	}
	return Verdict{Kind: Same}
}

// flipHoldAbandoned is the verdict of a flip's run in which a gate of
// the flip held a write until the API server stopped waiting for it (30
// s): that write never landed, its component sent it again once the
// timeout refused it, and the run went on from the timeout, not in the
// order the plan states, whatever it ended with. A run may hold another
// write than the reference's (a field that reaches its value twice), or
// the held write's component may be what the second write waits on.
func (p Plan) flipHoldAbandoned(got results.Scenario) (Verdict, bool) {
	if p.Kind != Flip {
		return Verdict{}, false
	}
	steps := p.flipReleaseSteps()
	for _, g := range got.AbandonedHolds {
		held, step := p.Held, steps[0]
		switch {
		case g == FlipAlsoGate && p.Also != nil:
			held, step = p.Also, steps[1]
		case g != FlipGate:
			continue
		}
		return Verdict{Kind: NotCarriedOut, FailedStep: step,
			Failure: fmt.Sprintf("gate %s held %s's %s of %s %s until the API server stopped waiting for it (the webhook's 30 s timeout): that request never landed, and the run went on from the timeout, not in the order the plan states", g, held.who(), held.Verb, held.Resource, held.Name)}, true
	}
	return Verdict{}, false
}

// conflictsWithHeld reports whether the step named step of a flip's run
// failed on a write refused with 409 Conflict that lost to a held write
// (its writer's verb of its resource changed the object since the
// resourceVersion the write carried: results.Write.ChangedBy).
func (p Plan) conflictsWithHeld(got results.Scenario, step string) bool {
	held := []*FlipWrite{p.Held}
	if p.Also != nil {
		held = append(held, p.Also)
	}
	for _, st := range got.Steps {
		if st.Name != step {
			continue
		}
		for _, w := range st.Writes {
			if w.Reason != "Conflict" {
				continue
			}
			for _, h := range held {
				// "trainer's patch of trainjobs/status (resourceVersion 7)"
				by := h.who() + "'s " + h.Verb + " of " + h.Resource + " ("
				if slices.ContainsFunc(w.ChangedBy, func(c string) bool { return strings.HasPrefix(c, by) }) {
					return true
				}
			}
		}
	}
	return false
}

// passed reports whether a run passed the step named name.
func passed(sc results.Scenario, name string) bool {
	return slices.ContainsFunc(sc.Steps, func(st results.Step) bool { return st.Name == name && st.Passed })
}

// FailedStep returns the first failed step of a run and its failure, or
// the run's failure when no step failed (a timeout, a set-up).
func FailedStep(sc results.Scenario) (string, string) {
	for _, st := range sc.Steps {
		if !st.Passed {
			return st.Name, st.Failure
		}
	}
	return "", sc.Failure
}

// refusedByWebhook reports whether a step's failure is the API server's
// refusal of a write whose admission webhook did not answer.
func refusedByWebhook(failure string) bool {
	return strings.Contains(failure, "failed calling webhook")
}

package explore

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// Flip plans: two writes to one TrainJob by different writers, in the order
// both reference runs showed (a component's write, then a later one of
// another component or of an actor), run in the other order. A gate holds
// the first until the second has landed; the scenario's expectations that
// read what the first changes are checked once it has gone through. The
// shaker's delays (at most 300 ms) cannot flip two writes seconds apart; a
// gate does, every time.
//
// A TrainJob's status is in part a copy of its JobSet's (the Trainer
// copies the Jobs' counts), and the two are read by different components:
// Kueue reads the TrainJob's to tell whether its Job is still active, the
// Trainer's webhook the JobSet's to let a manager's entry change through.
// A flip that holds the Trainer's status write to a TrainJob has a twin
// that also holds the JobSet controller's status write to the TrainJob's
// JobSet that reports the Job active (the count the Trainer copies), so
// that both statuses stay behind the Pods together.

// Flip is the kind of an order-flip plan.
const Flip = "flip"

// FlipGate names the gate a flip plan adds, FlipAlsoGate the second one of
// a flip that holds the JobSet's status write too.
const (
	FlipGate     = "explore-flip"
	FlipAlsoGate = "explore-flip-jobset"
)

// flipWithin bounds the wait for the second write while the first is
// held: one that does not come (it waits on the first, or on what the
// held component would have done meanwhile) leaves the plan not carried
// out.
const flipWithin = 30 * time.Second

// FlipWrite is one of a flip plan's two writes, as a reference run recorded
// it.
type FlipWrite struct {
	// Writer is the component (trainer, kueue) or the actor; Actor says
	// which.
	Writer string `json:"writer"`
	Actor  bool   `json:"actor,omitempty"`
	// Verb and Resource are the request's (patch, trainjobs/status).
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Kind is the object's, TrainJob or JobSet; Name is its name.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Step is the index of the step that ran when it landed.
	Step int `json:"step"`
	// Field is the leaf the write is told by, From and To its values
	// (compact JSON, empty where absent).
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	// Fields are every leaf it changed, and for a held write every leaf
	// its writer changed in that object after it, up to the second write
	// (a component with one worker, blocked on the held request, writes
	// none of them meanwhile): the expectations that read one are checked
	// after it goes on.
	Fields []string `json:"fields,omitempty"`
}

// who names the writer in a step's name.
func (w FlipWrite) who() string {
	if w.Actor && w.Writer == "" {
		return "the admin"
	}
	return w.Writer
}

func (w FlipWrite) String() string {
	return fmt.Sprintf("%s's %s of %s %s (%s to %s)", w.who(), w.Verb, w.Resource, w.Name, w.Field, orNone(w.To))
}

// heldGate is the gate that holds w from the start of the run: the first
// request of its writer, verb, resource and object that changes its field
// from the value it had before w in the reference run to w's value, or,
// where the field was absent then, from any other value to w's. Without
// the value before, a run could hold another write than the plan names: a
// TrainJob's status.jobsStatus[name=node].suspended goes to 0 as the
// Trainer first copies a JobSet status written before its Job reported
// itself suspended (absent to 0) in some runs, and again as the JobSet
// resumes (1 to 0); the gate held the first of them in those runs, the
// Trainer's one worker with it, until the API server stopped waiting (30
// s), and how the run went on hung on that timeout.
func (w FlipWrite) heldGate(name string) v1alpha1.Gate {
	change := &v1alpha1.GateChange{Field: w.Field, To: decode(w.To)}
	if w.From != "" {
		change.From = decode(w.From)
	}
	return v1alpha1.Gate{Name: name, Component: w.Writer, Verb: w.Verb, Resource: w.Resource, ObjectName: w.Name, Change: change}
}

// Flips returns the flip plans of a scenario from the changes its two
// reference runs recorded: for each write of a component to a TrainJob
// (not its create), each later write to that TrainJob by another writer,
// when the other reference run has the two in the same order. Pairs that
// make the same changes (writers, resources, fields) are one plan. Those
// whose second write is a component's come first: two controllers' order,
// which no actor's step states. A flip that holds a write to a TrainJob's
// status is followed by its twin that also holds the status write to the
// JobSet of that name, between the two, whose active count the held
// write's component copies later (alsoHeld).
func Flips(sc *v1alpha1.Scenario, a, b []results.ObjectChange) []Plan {
	stepIndex := stepIndexOf(sc)
	if !Flippable(sc) {
		return nil
	}
	seen := map[string]bool{}
	var byComponent, byActor []Plan
	for i, first := range a {
		held, ok := flipWrite(first, stepIndex)
		if !ok || first.Kind != "TrainJob" || first.Actor || first.Verb == "create" || slices.ContainsFunc(a[:i], func(c results.ObjectChange) bool { return like(c, held) }) {
			// Not a component's write to a TrainJob, or not the first
			// write like it (the gate would hold that one).
			continue
		}
		for j := i + 1; j < len(a); j++ {
			second := a[j]
			if second.Kind != "TrainJob" || second.Name != first.Name || second.Writer == first.Writer && second.Actor == first.Actor || second.Verb == "create" {
				continue
			}
			until, ok := flipWrite(second, stepIndex)
			if !ok || until.Step < held.Step {
				continue
			}
			key := held.Writer + " " + held.Resource + " " + strings.Join(held.Fields, ",") + " / " + until.Writer + " " + until.Resource + " " + until.Field
			if seen[key] || !inOrder(b, held, until) {
				continue
			}
			seen[key] = true
			h := held
			h.Fields = laterFields(a[i:j], held)
			p := Plan{Scenario: sc.Metadata.Name, Kind: Flip, Component: held.Writer, Step: held.Step, StepName: sc.Spec.Steps[held.Step].Name,
				Write: held.Verb + " " + held.Resource, Held: &h, Until: &until}
			plans := []Plan{p}
			if also, ok := alsoHeld(a[i+1:j], b, held, stepIndex); ok {
				p.Also = &also
				plans = append(plans, p)
			}
			if until.Actor {
				byActor = append(byActor, plans...)
			} else {
				byComponent = append(byComponent, plans...)
			}
		}
	}
	return append(byComponent, byActor...)
}

// stepIndexOf is the index of each step of a scenario, by name: the step
// a recorded change landed in.
func stepIndexOf(sc *v1alpha1.Scenario) map[string]int {
	out := map[string]int{}
	for i, st := range sc.Spec.Steps {
		out[st.Name] = i
	}
	return out
}

// laterFields are the leaves held's writer changed in its object from held
// (changes[0]) up to the second write: what a run cannot show while held
// is held.
func laterFields(changes []results.ObjectChange, held FlipWrite) []string {
	fields := slices.Clone(held.Fields)
	for _, c := range changes[1:] {
		if c.Kind != held.Kind || c.Name != held.Name || c.Writer != held.Writer || c.Actor {
			continue
		}
		for _, f := range c.Fields {
			if !isTime(f.Path) && !slices.Contains(fields, f.Path) {
				fields = append(fields, f.Path)
			}
		}
	}
	return fields
}

// alsoHeld is the write a flip that holds held, a status write to a
// TrainJob, holds too: among between (the changes after held, before the
// second write), the first status write of another component to the
// JobSet of that name that held's writer copies into the TrainJob later
// in between (copied: the Job's active count the JobSet controller reports
// and the Trainer copies into jobsStatus, which Kueue and the Trainer's
// webhook read), one the other reference run (b) also has after held. It is
// told by that leaf: the gate holds the write that reports it.
func alsoHeld(between, b []results.ObjectChange, held FlipWrite, stepIndex map[string]int) (FlipWrite, bool) {
	if held.Kind != "TrainJob" || !strings.HasSuffix(held.Resource, "/status") {
		return FlipWrite{}, false
	}
	for i, c := range between {
		if c.Kind != "JobSet" || c.Name != held.Name || c.Actor || c.Writer == held.Writer || !strings.HasSuffix(c.Resource, "/status") {
			continue
		}
		for _, f := range c.Fields {
			if f.To == "" || isTime(f.Path) || !copied(between[i+1:], held, f) {
				continue
			}
			w, ok := flipWrite(c, stepIndex)
			if !ok {
				continue
			}
			w.Field, w.From, w.To = f.Path, f.From, f.To
			if !inOrder(b, held, w) {
				return FlipWrite{}, false
			}
			return w, true
		}
	}
	return FlipWrite{}, false
}

// readCopies are the leaves of a JobSet's status the Trainer copies into
// its TrainJob's status that other components read at both levels, by
// the TrainJob's leaf: a replicated job's active count, which Kueue reads
// in the TrainJob (IsActive, before it clears its entry) and the Trainer's
// webhook in the JobSet (before it lets an entry change).
var readCopies = map[string]string{"status.replicatedJobsStatus[].active": "status.jobsStatus[].active"}

// copied reports whether held's writer copies f, a leaf of a JobSet's
// status, into held's TrainJob among changes (readCopies: the same item,
// to the same value).
func copied(changes []results.ObjectChange, held FlipWrite, f results.FieldDiff) bool {
	open, end := strings.IndexByte(f.Path, '['), strings.IndexByte(f.Path, ']')
	if open < 0 || end < open {
		return false
	}
	into, ok := readCopies[f.Path[:open+1]+f.Path[end:]]
	if !ok {
		return false
	}
	into = strings.Replace(into, "[]", f.Path[open:end+1], 1)
	return slices.ContainsFunc(changes, func(c results.ObjectChange) bool {
		return c.Kind == held.Kind && c.Name == held.Name && c.Writer == held.Writer && !c.Actor &&
			slices.ContainsFunc(c.Fields, func(g results.FieldDiff) bool { return g.Path == into && g.To == f.To })
	})
}

// flipKey is what a flip plan's ID is made of: the two writes, told by
// writer, resource, object, step and the change each is told by, so that
// the same flip has the same ID in every explore (a finding kept in
// scenarios/found/ is known by it), whatever other flips the reference runs
// gave.
func flipKey(held, until, also *FlipWrite) string {
	h := fnv.New32a()
	for _, w := range []*FlipWrite{held, until, also} {
		if w != nil {
			fmt.Fprintf(h, "%s|%t|%s|%s|%d|%s|%s;", w.Writer, w.Actor, w.Resource, w.Name, w.Step, w.Field, w.To)
		}
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// flipWrite is a recorded change as a flip plan's write: the leaf it is
// told by (not a time, the first by path that has a value after), and the
// index of its step; false for a change in the set-up, or without such a
// leaf.
func flipWrite(c results.ObjectChange, stepIndex map[string]int) (FlipWrite, bool) {
	step, ok := stepIndex[c.Step]
	if !ok {
		return FlipWrite{}, false
	}
	w := FlipWrite{Writer: c.Writer, Actor: c.Actor, Verb: c.Verb, Resource: c.Resource, Kind: c.Kind, Name: c.Name, Step: step}
	for _, f := range c.Fields {
		if isTime(f.Path) {
			continue
		}
		w.Fields = append(w.Fields, f.Path)
		if w.Field == "" && f.To != "" {
			w.Field, w.From, w.To = f.Path, f.From, f.To
		}
	}
	return w, w.Field != ""
}

// isTime reports whether a leaf is a time a write stamps (a condition's
// lastTransitionTime, an entry's time): it tells no write apart.
func isTime(path string) bool {
	last := strings.ToLower(fieldpath.Last(path))
	return last == "time" || strings.HasSuffix(last, "time") || strings.HasSuffix(last, "timestamp")
}

// inOrder reports whether changes have a write like first before one like
// second (the same writer, resource, object and field change).
func inOrder(changes []results.ObjectChange, first, second FlipWrite) bool {
	i := slices.IndexFunc(changes, func(c results.ObjectChange) bool { return like(c, first) })
	return i >= 0 && slices.ContainsFunc(changes[i+1:], func(c results.ObjectChange) bool { return like(c, second) })
}

// like reports whether a change is a write like w: the same writer,
// resource, object and change of w's field.
func like(c results.ObjectChange, w FlipWrite) bool {
	if c.Writer != w.Writer || c.Actor != w.Actor || c.Resource != w.Resource || c.Kind != w.Kind || c.Name != w.Name {
		return false
	}
	return slices.ContainsFunc(c.Fields, func(f results.FieldDiff) bool { return f.Path == w.Field && f.To == w.To })
}

// Flip's steps, by name.
func (p Plan) flipWaitStep() string {
	if p.Also != nil {
		return StepPrefix + p.Until.who() + "'s write lands while " + p.Held.who() + "'s and " + p.Also.who() + "'s are held"
	}
	return StepPrefix + p.Until.who() + "'s write lands while " + p.Held.who() + "'s is held"
}

// flipHeldStep names the step before an actor's second write that waits
// until the held writes are held.
func (p Plan) flipHeldStep() string {
	if p.Also != nil {
		return StepPrefix + p.Held.who() + "'s and " + p.Also.who() + "'s writes are held"
	}
	return StepPrefix + p.Held.who() + "'s write is held"
}

// flipReleaseSteps name the steps that let the held writes go on: the
// held one, then the JobSet's when it is held too. The last one checks
// the moved expectations; a run that failed before it had the order held.
func (p Plan) flipReleaseSteps() []string {
	out := []string{StepPrefix + p.Held.who() + "'s held write goes on"}
	if p.Also != nil {
		out = append(out, StepPrefix+p.Also.who()+"'s held write goes on")
	}
	return out
}

// lastFlipRelease is the last of flipReleaseSteps.
func (p Plan) lastFlipRelease() string {
	steps := p.flipReleaseSteps()
	return steps[len(steps)-1]
}

// applyFlip puts the flip's gate and steps into out, a copy of the
// scenario: the gate holds the first write from the start; (for an
// actor's write) a step waits until the first is held, the second write's
// step runs without its expectations, then (for a component's write) a
// step waits until it has landed with the first still held, a
// step releases the gate and checks, as reached since, the expectations of
// the steps between the two that read what the first changes, and a step
// checks the second's step's expectations.
func (p Plan) applyFlip(out *v1alpha1.Scenario) {
	held, until := p.Held, p.Until
	heldWrites, gates := []*FlipWrite{held}, []string{FlipGate}
	out.Spec.Gates = append(out.Spec.Gates, held.heldGate(FlipGate))
	if p.Also != nil {
		heldWrites, gates = append(heldWrites, p.Also), append(gates, FlipAlsoGate)
		out.Spec.Gates = append(out.Spec.Gates, p.Also.heldGate(FlipAlsoGate))
	}
	steps := out.Spec.Steps
	var moved []v1alpha1.ObjectExpectation
	var next []v1alpha1.Step
	// dropped are the steps left with nothing to do, every expectation
	// of theirs moved: what was to end after one ends after the last
	// release, which checks them; a view that starts before one starts
	// before the step after it.
	var dropped []string
	add := func(st v1alpha1.Step) {
		for _, name := range dropped {
			retargetFrom(out, name, st.Name)
		}
		dropped = nil
		next = append(next, st)
	}
	for i := range steps {
		st := steps[i]
		if i >= held.Step && i < until.Step && st.Expect != nil {
			e := *st.Expect
			e.Objects, moved = readsHeld(e.Objects, heldWrites, moved)
			st.Expect = emptyToNil(&e)
			if _, acts := v1alpha1.VerbOf(&st); st.Expect == nil && !acts && st.Release == nil {
				dropped = append(dropped, st.Name)
				retargetUntil(out, st.Name, p.lastFlipRelease())
				continue
			}
		}
		if i != until.Step {
			add(st)
			continue
		}
		expect := st.Expect
		st.Expect = nil
		heldNow := func() []v1alpha1.HeldExpectation {
			var out []v1alpha1.HeldExpectation
			for _, g := range gates {
				out = append(out, v1alpha1.HeldExpectation{Gate: g})
			}
			return out
		}
		if until.Actor {
			// The held writes were sent before the actor's, as in the
			// reference runs (their components read the state before
			// it), and land after it. Without this wait, a step before
			// that no longer waits on them (its expectations moved)
			// let the actor's write go first and the release find
			// nothing held.
			add(v1alpha1.Step{Name: p.flipHeldStep(), Expect: &v1alpha1.Expect{Within: v1alpha1.Duration{Duration: flipWithin}, Held: heldNow()}})
		}
		if _, acts := v1alpha1.VerbOf(&st); acts {
			add(st)
		}
		if !until.Actor {
			wait := &v1alpha1.Expect{Within: v1alpha1.Duration{Duration: flipWithin}, Objects: []v1alpha1.ObjectExpectation{landed(until)}, Held: heldNow()}
			add(v1alpha1.Step{Name: p.flipWaitStep(), Expect: wait})
		}
		for k, name := range p.flipReleaseSteps() {
			release := v1alpha1.Step{Name: name, Release: &v1alpha1.Release{Gate: gates[k]}}
			if k == len(gates)-1 && len(moved) > 0 {
				// What they read is the held writes', which the second
				// write's consequences may change right after it lands:
				// each need only have held at some moment since the
				// release.
				for i := range moved {
					moved[i].Reached = true
				}
				release.Expect = &v1alpha1.Expect{Objects: moved}
			}
			add(release)
		}
		for _, later := range expectationsLater(out, st.Name, expect) {
			add(later)
		}
	}
	out.Spec.Steps = next
}

// readsHeld moves from objs to moved the expectations of a held write's
// object that read a field it changes.
func readsHeld(objs []v1alpha1.ObjectExpectation, held []*FlipWrite, moved []v1alpha1.ObjectExpectation) (keep, out []v1alpha1.ObjectExpectation) {
	for _, o := range objs {
		if slices.ContainsFunc(held, func(w *FlipWrite) bool {
			return o.Target.Kind == w.Kind && o.Target.Name == w.Name && slices.ContainsFunc(w.Fields, func(f string) bool { return reads(o, f) })
		}) {
			moved = append(moved, o)
			continue
		}
		keep = append(keep, o)
	}
	return keep, moved
}

// reads reports whether an object expectation's match (or matchAny) says
// anything of the field at path: of it, of what is under it, or of a
// value it is in.
func reads(o v1alpha1.ObjectExpectation, path string) bool {
	p, err := fieldpath.Parse(path)
	if err != nil {
		return true
	}
	matches := append([]v1alpha1.Object{o.Match}, o.MatchAny...)
	return slices.ContainsFunc(matches, func(m v1alpha1.Object) bool { return m != nil && readsAt(map[string]any(m), p) })
}

func readsAt(v any, p fieldpath.Path) bool {
	if len(p) == 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if p[0].Kind != fieldpath.FieldKind {
			return false
		}
		child, ok := x[p[0].Name]
		return ok && readsAt(child, p[1:])
	case []any:
		if p[0].Kind == fieldpath.FieldKind {
			return false
		}
		return slices.ContainsFunc(x, func(item any) bool { return readsAt(item, p[1:]) })
	default:
		return true // a value the field is in
	}
}

// landed is the expectation that the second write has landed: its object
// has its field's value after it (compared whole when a map or list).
func landed(w *FlipWrite) v1alpha1.ObjectExpectation {
	o := v1alpha1.ObjectExpectation{Target: v1alpha1.Target{Kind: "TrainJob", Name: w.Name}}
	p, err := fieldpath.Parse(w.Field)
	if err != nil {
		return o
	}
	value := decode(w.To)
	m, _ := nest(p, value).(map[string]any)
	o.Match = m
	switch value.(type) {
	case map[string]any, []any:
		o.Exact = []string{w.Field}
	}
	return o
}

// nest builds the partial object that has value at p: a list item by key
// is an item with the key, one by index an item of its own.
func nest(p fieldpath.Path, value any) any {
	if len(p) == 0 {
		return value
	}
	inner := nest(p[1:], value)
	switch p[0].Kind {
	case fieldpath.FieldKind:
		return map[string]any{p[0].Name: inner}
	default:
		item, _ := inner.(map[string]any)
		if item == nil {
			item = map[string]any{}
		}
		for _, k := range p[0].Key {
			item[k.Name] = decode(k.Value) // a string as it is, else JSON
		}
		return []any{item}
	}
}

// decode is a compact JSON value as YAML takes it.
func decode(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// emptyToNil is nil for expectations that expect nothing.
func emptyToNil(e *v1alpha1.Expect) *v1alpha1.Expect {
	if e.Pods == nil && len(e.Objects) == 0 && len(e.Events) == 0 && len(e.Owners) == 0 && e.NoOverlaps == "" && len(e.Requests) == 0 && e.Holding == "" && len(e.Held) == 0 {
		return nil
	}
	return e
}

// expectationsLater returns the step that checks, later, the expectations
// expect of the step named name, "NAME: its expectations" (none when expect
// is nil), and makes what was to end after that step (a gate's, view's or
// webhook hold's until: its write answered and its expect checked) end
// after it.
func expectationsLater(out *v1alpha1.Scenario, name string, expect *v1alpha1.Expect) []v1alpha1.Step {
	if expect == nil {
		return nil
	}
	last := name + ": its expectations"
	retargetUntil(out, name, last)
	return []v1alpha1.Step{{Name: last, Expect: expect}}
}

// retargetUntil makes what was to end after step from (a gate's,
// view's or webhook hold's until) end after step to.
func retargetUntil(sc *v1alpha1.Scenario, from, to string) {
	retarget := func(until *string) {
		if *until == from {
			*until = to
		}
	}
	for i := range sc.Spec.Webhooks {
		if h := sc.Spec.Webhooks[i].Hold; h != nil {
			retarget(&h.Until)
		}
	}
	for i := range sc.Spec.Gates {
		retarget(&sc.Spec.Gates[i].Until)
	}
	for i := range sc.Spec.Views {
		retarget(&sc.Spec.Views[i].Until)
	}
}

// retargetFrom makes a view that starts before step from start before
// step to.
func retargetFrom(sc *v1alpha1.Scenario, from, to string) {
	for i := range sc.Spec.Views {
		if sc.Spec.Views[i].From == from {
			sc.Spec.Views[i].From = to
		}
	}
}

// Flippable reports whether a scenario can have flip plans: not one that
// states its components' lifecycle or explores the interleavings of a
// concurrently group (Plans).
func Flippable(sc *v1alpha1.Scenario) bool {
	return !slices.ContainsFunc(sc.Spec.Steps, func(st v1alpha1.Step) bool {
		return st.Component != nil || st.Concurrently != nil && st.Concurrently.Interleavings != nil
	})
}

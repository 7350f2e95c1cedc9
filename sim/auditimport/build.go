package auditimport

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// actorKey is who wrote: the user the server authorised and the field
// manager of the write.
type actorKey struct{ user, fieldManager string }

// builder makes the scenario of one namespace's writes.
type builder struct {
	res       *Result
	namespace string
	actors    map[actorKey]string // actor names
	// byRV is the write that answered with a resourceVersion, of every
	// user: which write a later request's resourceVersion was read from.
	byRV      map[string]*write
	trainJobs []string
	n         int // steps made
	// actorList is spec.actors, in the order they first wrote.
	actorList []v1alpha1.Actor
	// concurrently is Options.Concurrently.
	concurrently bool
	// pods are the writes to the namespace's Pods, jobSets the JobSets'
	// statuses, in the log's order.
	pods    []podEvent
	jobSets []jobSetStatus
	// created are the namespace's JobSets and Jobs as they were made.
	created []created
	// stepWrites are the managers' writes by the name of their step.
	stepWrites map[string][]*write
}

// build turns the writes, in the order the server completed them, into the
// scenario's actors and steps.
func (b *builder) build(writes []*write) error {
	spec := &b.res.Scenario.Spec
	for _, w := range writes {
		if w.kind == trainJobKind && !slices.Contains(b.trainJobs, w.name) {
			b.trainJobs = append(b.trainJobs, w.name)
		}
	}
	var managers []*write
	for _, w := range writes {
		if w.component {
			b.res.Components++
			continue
		}
		if w.status {
			who, _ := w.ev.user()
			b.note(fmt.Sprintf("%s: %s wrote %s %s's status: left out (%s writes it on replay)", w.ev.where(), who, w.kind, w.name, statusWriters[w.kind]))
			continue
		}
		if len(w.ev.RequestObject) == 0 || string(w.ev.RequestObject) == "null" {
			if w.ev.Verb != "delete" {
				return inputErrorf("%s: the %s of %s %s/%s by %s is recorded at level %s, without its body: import needs level Request or RequestResponse for the writes to TrainJobs and what they depend on (docs/record.md)", w.ev.where(), w.ev.Verb, w.kind, w.namespace, w.name, w.ev.User.Username, w.ev.Level)
			}
		} else {
			// Checked once here: the steps read the body as an object
			// (a patch's may be a list of operations).
			var body any
			err := json.Unmarshal(w.ev.RequestObject, &body)
			_, object := body.(map[string]any)
			_, ops := body.([]any)
			if err != nil || !(object || ops && w.ev.Verb == "patch") {
				return inputErrorf("%s: the body of the %s of %s %s/%s is not an object: %.80s", w.ev.where(), w.ev.Verb, w.kind, w.namespace, w.name, string(w.ev.RequestObject))
			}
		}
		managers = append(managers, w)
	}
	if len(managers) == 0 {
		return inputErrorf("the TrainJob(s) %s have only the components' writes in the log: nothing of a manager to import", strings.Join(b.trainJobs, ", "))
	}
	responses := false
	for _, w := range writes {
		if len(w.ev.ResponseObject) > 0 {
			responses = true
		}
	}
	if !responses {
		b.note("the log has no response objects (level Request): which write a resourceVersion was read from, and how the TrainJobs ended, are unknown; writes that carried one are sent from a read just before them, and no step expects the TrainJobs' final entries (RequestResponse records both)")
	}

	// What was created before the first write to a TrainJob is the
	// scenario's set-up, which the TrainJobs' first write waits for, as
	// it waited on the cluster (the Trainer's webhook reads runtimes from
	// its cache).
	for len(managers) > 0 && managers[0].kind != trainJobKind && managers[0].ev.Verb == "create" && managers[0].rv != "" {
		w := managers[0]
		managers = managers[1:]
		spec.Setup = append(spec.Setup, v1alpha1.SetupObject{Object: cleanObject(w.ev.RequestObject)})
		b.byRV[w.rv] = w
		if user, groups := w.ev.user(); !harnessAdmin(user, groups) {
			b.note(fmt.Sprintf("%s: %s created %s %s before the first write to a TrainJob: in spec.setup, created as simctl's admin", w.ev.where(), user, w.kind, w.name))
		}
		b.res.Writes++
	}

	if wait := b.quotasCounted(spec.Setup, managers, writes); wait != nil {
		spec.Steps = append(spec.Steps, *wait)
	}

	// Writes that overlapped in time (one received before the one before
	// it was answered) are a group, sent together.
	var groups [][]*write
	for _, w := range managers {
		if n := len(groups); n > 0 && overlaps(groups[n-1], w) {
			groups[n-1] = append(groups[n-1], w)
			continue
		}
		groups = append(groups, []*write{w})
	}
	b.staleReads(managers, writes)
	admissions, stops := b.kueueAdmissions(writes), b.kueueStops(writes)
	// stopsUntil adds the steps of the stops stored before t (zero: all),
	// and of the admissions stored before each of them.
	stopsUntil := func(t time.Time, g []*write) {
		for len(stops) > 0 && (t.IsZero() || stops[0].at.Before(t)) {
			b.admissionsUntil(&admissions, stops[0].at, g, writes)
			b.suspendedBefore(stops[0])
			stops = stops[1:]
		}
	}
	for _, g := range groups {
		stopsUntil(g[0].ev.Received, g)
		b.admissionsUntil(&admissions, g[0].ev.Received, g, writes)
		wait := b.componentsBefore(g[0], writes)
		if js := b.jobSetBefore(g[0], writes); js != nil {
			wait = b.joined(wait, fmt.Sprintf("JobSet %s's status is as its controller left it before the next write", g[0].name), "; its JobSet's too")
			wait.Expect.Objects = append(wait.Expect.Objects, *js)
		}
		if seen := b.suspendedSeen(g[0], writes); seen != nil {
			wait = b.joined(wait, fmt.Sprintf("TrainJob %s is Suspended, as the Trainer saw it before the resume", g[0].name), "; the Trainer saw it Suspended")
			wait.Expect.Objects = append(wait.Expect.Objects, *seen)
		}
		if pods := b.podsBefore(g[0]); pods != nil {
			wait = b.joined(wait, fmt.Sprintf("TrainJob %s's Pods run before the next write", g[0].name), fmt.Sprintf("; its %d Pod(s) run", *pods.Count))
			wait.Expect.Pods = pods
		}
		waitAt := -1
		if wait != nil {
			waitAt = len(spec.Steps)
			spec.Steps = append(spec.Steps, *wait)
		}
		for _, m := range g {
			for _, w := range managers {
				if w.readBefore == m {
					get := b.readStep(w)
					w.read = get.Name
					spec.Steps = append(spec.Steps, get)
				}
			}
		}
		var steps []v1alpha1.Step
		for _, w := range g {
			st, reads, err := b.step(w, writes[:indexOf(writes, w)])
			if err != nil {
				return err
			}
			spec.Steps = append(spec.Steps, reads...)
			steps = append(steps, st)
			if gate := b.decidedBefore(w, st.Name); gate != nil && len(g) == 1 {
				spec.Gates = append(spec.Gates, *gate)
				if waitAt >= 0 {
					// The refusal is decided on the JobSet the gate
					// holds; its Pods, which the Job controller stops
					// on its own once the job is suspended, are not.
					if wait := &spec.Steps[waitAt]; len(wait.Expect.Objects) == 0 {
						spec.Steps = slices.Delete(spec.Steps, waitAt, waitAt+1)
					} else {
						wait.Expect.Pods = nil
						wait.Name = podsRun.ReplaceAllString(wait.Name, "")
					}
				}
			}
		}
		switch {
		case len(steps) == 1:
			spec.Steps = append(spec.Steps, steps[0])
		case b.concurrently:
			b.n++
			spec.Steps = append(spec.Steps, v1alpha1.Step{
				Name:         fmt.Sprintf("%d: %d writes sent together (each received before the one before it was answered)", b.n, len(steps)),
				Concurrently: &v1alpha1.Concurrently{Writes: steps},
			})
		default:
			// One after the other, in the order the server answered
			// them: the outcome the log shows, but for which of its
			// messages a refusal gave, which can depend on whether the
			// other write was stored before the refused one was
			// validated (sent one after the other, it always was): only
			// the message's beginning, up to the kind of the field
			// error, is expected.
			for i := range steps {
				if e := steps[i].ExpectError; e != nil {
					e.MessageContains = raceMessage(e.MessageContains)
				}
			}
			spec.Steps = append(spec.Steps, steps...)
			var names []string
			for _, st := range steps {
				names = append(names, fmt.Sprintf("%q", st.Name))
			}
			b.note(fmt.Sprintf("steps %s raced (each received before the one before it was answered): they are sent in the order the server answered them, a refusal's message expected up to the kind of its field error (the rest can depend on the race); simctl import --concurrently sends them together, in a concurrently group whose interleavings explore the other orders", strings.Join(names, ", ")))
		}
		for _, w := range g {
			if w.rv != "" {
				b.byRV[w.rv] = w
			}
		}
	}
	stopsUntil(time.Time{}, nil)
	b.admissionsUntil(&admissions, time.Time{}, nil, writes)
	spec.Actors = b.actorList
	if last := b.finalExpectation(writes); last != nil {
		spec.Steps = append(spec.Steps, *last)
	}
	spec.Steps = append(spec.Steps, b.podsCreatedWith()...)
	return nil
}

// admissionsUntil adds the steps of the admissions stored before t (zero:
// all), and takes them off: the gate's and, when g (the group of writes
// received at t) writes another object, the wait before g for the
// admission.
func (b *builder) admissionsUntil(admissions *[]admission, t time.Time, g []*write, writes []*write) {
	spec := &b.res.Scenario.Spec
	for len(*admissions) > 0 && (t.IsZero() || (*admissions)[0].at.Before(t)) {
		a := (*admissions)[0]
		if a.gated {
			b.admitAfter(a)
		}
		if g != nil && (a.trainJob != g[0].name || g[0].kind != trainJobKind) {
			if wait := b.admittedBefore(a.trainJob, g[0], writes); wait != nil {
				spec.Steps = append(spec.Steps, *wait)
			}
		}
		*admissions = (*admissions)[1:]
	}
}

// joined is the step that waits before a write, with one more thing to
// wait for: a step of its own named alone when there is none yet (wait
// nil), else wait with with added to its name.
func (b *builder) joined(wait *v1alpha1.Step, alone, with string) *v1alpha1.Step {
	if wait == nil {
		b.n++
		return &v1alpha1.Step{Name: fmt.Sprintf("%d: %s", b.n, alone), Expect: &v1alpha1.Expect{}}
	}
	wait.Name += with
	return wait
}

// quotasCounted is a step that waits until the set-up's ResourceQuotas
// have been counted, with the limits of the status last written before the
// first manager's write (by the quota controller, or by the API server's
// quota admission as it counted a create): a quota is enforced only once
// counted. Its used counts are not waited for: the quota controller counts
// from its cache, which for a quota made right after its namespace may
// not yet have the namespace's kube-root-ca.crt (published by a controller
// when it will), and a create before the quota is never charged, so the
// same objects can count differently on replay. nil when the set-up has
// no quota or the log none of their status (it was not counted yet when
// the managers began).
func (b *builder) quotasCounted(setup []v1alpha1.SetupObject, managers, writes []*write) *v1alpha1.Step {
	if len(managers) == 0 {
		return nil
	}
	first := managers[0]
	var exps []v1alpha1.ObjectExpectation
	var names []string
	for _, o := range setup {
		if o.Object["kind"] != "ResourceQuota" {
			continue
		}
		meta, _ := o.Object["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		var status map[string]any
		for _, w := range writes {
			if w.kind == "ResourceQuota" && w.name == name && w.status && w.ev.Completed.Before(first.ev.Received) {
				if s, ok := responseObject(w)["status"].(map[string]any); ok {
					status = s
				}
			}
		}
		hard, ok := status["hard"]
		if !ok {
			continue
		}
		names = append(names, name)
		exps = append(exps, v1alpha1.ObjectExpectation{
			Target: v1alpha1.Target{APIVersion: "v1", Kind: "ResourceQuota", Name: name},
			Match:  v1alpha1.Object{"status": map[string]any{"hard": hard}},
		})
	}
	if len(exps) == 0 {
		return nil
	}
	b.n++
	return &v1alpha1.Step{
		Name:   fmt.Sprintf("%d: ResourceQuota %s counted as before the first write", b.n, strings.Join(names, ", ")),
		Expect: &v1alpha1.Expect{Objects: exps},
	}
}

// podsRun ends the name of a wait that expects Pods besides objects.
var podsRun = regexp.MustCompile(`; its \d+ Pod\(s\) run$`)

// componentsBefore keeps the Trainer's part of the order: a step that
// waits until the TrainJob's status is as the Trainer's last write of it
// before w left it, in what w and the writes after it depend on; nil when
// the log has none.
//
//   - Before a write that carries a resourceVersion (an update from a
//     read, a patch with a version), when the last write to the TrainJob
//     before w was the Trainer's: the read w was sent from saw it, and on
//     replay must too, or the Trainer's write lands between the read and w
//     and w is refused 409 where it was accepted. Its conditions say so.
//   - Before a write that sends runtimePatches: the Trainer's webhook
//     refuses the change while its cache of the JobSet counts a Job
//     active, and the jobs' counts the Trainer last reported are what its
//     cache had (the JobSet's own status, jobSetBefore, may be ahead of
//     it).
//   - Before any other write but a delete, the jobs' counts too: they
//     come down a chain (the Job controller, the JobSet controller, the
//     Trainer) that lags on replay as it did on the cluster, by seconds
//     when shaken. A write sent before the Trainer reported what the log
//     shows it had reported puts the report after the write, where the
//     log has none: Kueue's preemption sent before the Trainer reported
//     the Pods of a resumed job active, and the wait before the next
//     write for "none active" held on the report from before they ran;
//     the Trainer's "active", then "none", came between that write and
//     Kueue's update from its answer, refused 409
//     (kueue-readmission-new-flavor's import, shaken).
//
// Not when the write carries a resourceVersion of a manager's write that
// came after the Trainer's: no write of the Trainer came between them,
// and waiting for a later one would bring it between. The conditions
// only before a write that carries one: they depend on what the Trainer
// saw (Resumed only if it saw the TrainJob suspended), which on replay
// may never come.
//
// A controller may skip on replay a status it wrote on the cluster (it
// reconciles to the latest state, and two changes seen together are one
// write), or be further on. What the log shows is that it had got at
// least that far, so the wait accepts that status or any it wrote after
// it (matchAny, laterStatus): those that followed a later manager's write
// cannot be reached before it on replay.
func (b *builder) componentsBefore(w *write, writes []*write) *v1alpha1.Step {
	if w.kind != trainJobKind || w.ev.Verb == "create" || w.ev.Verb == "delete" {
		return nil
	}
	var fields []string
	read := carriedRV(w) != ""
	if read {
		fields = append(fields, "conditions")
	}
	fields = append(fields, "jobsStatus")
	at, lastAny := -1, -1
	for i, o := range writes {
		if o.kind == trainJobKind && o.name == w.name && o.rv != "" && before(o, w) && o != w {
			lastAny = i
			if o.component || o.status {
				at = i
			}
		}
	}
	if at < 0 || read && lastAny != at {
		// A write from a read of a manager's answer, which the log has
		// accepted: no write of the Trainer came between, and a wait for
		// one would bring it between.
		return nil
	}
	return b.statusWait(w.name, fields, at, w, writes, "")
}

// statusWait is a step that waits until TrainJob name's status fields are
// as the component's write writes[at] left them, or as one of its later
// writes took them (but none of the statuses before it), before the
// manager's write next; why ends the step's name. nil when that write's
// answer has none of the fields.
//
// A write of the component received before next but answered after it
// raced next: the log cannot tell whether its status was stored before
// next was sent, and the manager may have waited for it (the scenario
// kueue/preemption-clears-entry clears Kueue's entry once the TrainJob
// reports no active Job; the Trainer's status patch that reported it was
// answered 13 ms after the clear was received, and the import waited for
// the status before it, active 1, which the Trainer had left by then on
// replay: a round trip beside make test's other packages, 30 s). Its
// status is accepted even when the TrainJob had it before writes[at].
func (b *builder) statusWait(name string, fields []string, at int, next *write, writes []*write, why string) *v1alpha1.Step {
	last := writes[at]
	fields = telling(name, fields, at, writes)
	status, ok := statusOf(last, fields)
	if !ok {
		return nil
	}
	var earlier []map[string]any
	for _, o := range writes[:at] {
		if s, ok := statusOf(o, fields); ok && o.kind == trainJobKind && o.name == name && (o.component || o.status) {
			earlier = append(earlier, s)
		}
	}
	statuses := []map[string]any{status}
	reactions := reactionsFrom(name, next, writes)
	for _, o := range writes[at+1:] {
		if o.kind != trainJobKind || o.name != name || !(o.component || o.status) {
			continue
		}
		s, ok := statusOf(o, fields)
		switch {
		case !ok, !reactions.IsZero() && o.ev.Received.After(reactions):
		case !o.ev.Received.After(next.ev.Received):
			statuses = laterStatus(statuses, nil, s) // raced next
		default:
			statuses = laterStatus(statuses, earlier, s)
		}
	}
	statuses = b.copiedLater(name, statuses, earlier, last, next, reactions)
	who, _ := last.ev.user()
	b.n++
	exp := v1alpha1.ObjectExpectation{Target: v1alpha1.Target{Kind: trainJobKind, Name: name}, Reached: true,
		ReachedSince: b.sinceStep(name, func(o *write) bool { return before(o, last) })}
	stepName := fmt.Sprintf("%d: TrainJob %s's %s as %s last left it before the next write%s", b.n, name, strings.Join(fields, " and "), who, why)
	if len(statuses) == 1 {
		exp.Match = v1alpha1.Object{"status": status}
	} else {
		stepName += fmt.Sprintf(", or as its later writes took it (%d)", len(statuses)-1)
		for _, s := range statuses {
			exp.MatchAny = append(exp.MatchAny, v1alpha1.Object{"status": s})
		}
	}
	return &v1alpha1.Step{Name: stepName, Expect: &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{exp}}}
}

// suspendedSeen keeps an order that the Trainer's conditions show: its
// Suspended=False "Resumed" condition, which it sets only on a TrainJob
// it has seen suspended (setSuspendedCondition), says that it read TrainJob
// w.name suspended before the manager's resume w. On replay the resume can
// come first (the SDK's create, Kueue's apply and its resume are sent
// within 35 ms, before the Trainer's first reconcile): the Trainer then
// never sees the job suspended and writes no Suspended condition at all,
// and a later wait for "Resumed" (the README example's import) never holds.
// The wait before w is for the Suspended=True condition: the order in
// which the Trainer sees the suspension first. nil when w resumes no
// TrainJob or the log has no Resumed condition of the Trainer after it.
func (b *builder) suspendedSeen(w *write, writes []*write) *v1alpha1.ObjectExpectation {
	if w.kind != trainJobKind || w.rv == "" || suspended(responseObject(w)) {
		return nil
	}
	resumed := false
	for _, o := range writes {
		if o.kind == trainJobKind && o.name == w.name && o.rv != "" && o != w && !before(o, w) && (o.component || o.status) && hasCondition(responseObject(o), "Suspended", "False", "Resumed") {
			resumed = true
		}
	}
	if prior := priorObject(w, writes); prior == nil || !suspended(prior) || !resumed {
		return nil
	}
	return &v1alpha1.ObjectExpectation{Target: v1alpha1.Target{Kind: trainJobKind, Name: w.name},
		Match: v1alpha1.Object{"status": map[string]any{"conditions": []any{map[string]any{"type": "Suspended", "status": "True"}}}}}
}

// priorObject is w's object as the last write before it left it (its
// answer); nil when the log has none.
func priorObject(w *write, writes []*write) map[string]any {
	var prior map[string]any
	for _, o := range writes {
		if o.kind == w.kind && o.name == w.name && o.rv != "" && o != w && before(o, w) {
			prior = responseObject(o)
		}
	}
	return prior
}

// suspends reports whether w, accepted, suspended a running TrainJob
// (Kueue's preemption, say).
func suspends(w *write, writes []*write) bool {
	if w.kind != trainJobKind || w.rv == "" || !suspended(responseObject(w)) {
		return false
	}
	prior := priorObject(w, writes)
	return prior != nil && !suspended(prior)
}

// suspended reports whether a TrainJob object has spec.suspend true.
func suspended(obj map[string]any) bool {
	s, _ := nested(obj, "spec", "suspend").(bool)
	return s
}

// hasCondition reports whether obj's status has condition typ with status
// and reason.
func hasCondition(obj map[string]any, typ, status, reason string) bool {
	conds, _ := nested(obj, "status", "conditions").([]any)
	for _, c := range conds {
		if nested(c, "type") == typ && nested(c, "status") == status && nested(c, "reason") == reason {
			return true
		}
	}
	return false
}

// copiedLater adds to statuses, when they have jobsStatus (the Trainer's
// copy of its JobSet's replicatedJobsStatus), each with each count the
// JobSet controller wrote after the Trainer's write last was received and
// before next was (up to reactions, as statusWait): on replay the Trainer
// may copy a later count of the JobSet than the recording's did by the
// manager's write. docs-scheduling-gates' recording had the Trainer report
// the job Suspended with its Job's counts from before the JobSet
// controller suspended it (none suspended); the JobSet controller had
// reported the Job suspended before the SDK's next write, but the Trainer
// only after it; a replay's Trainer reported Suspended with the Job
// suspended at once, and the wait for "none suspended" held 30 s (CI's
// round trip, plain and shaken). States the TrainJob had before (earlier)
// are left out, as laterStatus does.
//
// With the conditions, each count goes with the conditions of each status
// accepted (the Trainer's conditions and its copy of the counts move on
// apart): real-kueue-preempted-before-reported-active's import, shaken,
// reached "Resumed, 1 active", which the recording's Trainer reported only
// with the Job still suspended.
//
// The counts the Trainer's write copied may be older than its JobSet's by
// then (its cache lagged): the counts the JobSet controller wrote after
// the write the Trainer copied count too, even those received before the
// Trainer's write. restrictions-immutable-fields-while-suspended's
// recording had the JobSet report its Job suspended, then the Trainer
// report none suspended, from the JobSet's status before; its replays,
// plain and shaken, never reported none suspended (CI's round trip).
func (b *builder) copiedLater(name string, statuses, earlier []map[string]any, last, next *write, reactions time.Time) []map[string]any {
	accepted := slices.Clone(statuses)
	from := last.ev.Received
	if copied, ok := statuses[0]["jobsStatus"]; ok {
		for _, js := range b.jobSets {
			if js.name == name && js.received.Before(last.ev.Received) && reflect.DeepEqual(js.status["replicatedJobsStatus"], copied) {
				from = js.received // the last the Trainer's write could have copied
			}
		}
	}
	for _, js := range b.jobSets {
		if js.name != name || js.received.Before(from) || js.at.After(next.ev.Received) || !reactions.IsZero() && js.received.After(reactions) {
			continue
		}
		for _, status := range accepted {
			if _, ok := status["jobsStatus"]; !ok {
				continue
			}
			s := maps.Clone(status)
			s["jobsStatus"] = js.status["replicatedJobsStatus"]
			statuses = laterStatus(statuses, earlier, s)
		}
	}
	return statuses
}

// sinceStep is the step of the last manager's write to TrainJob name that
// came before a component's status (stored before it, as came says):
// the status the wait is for followed it on the cluster, and on replay
// may come before the wait's step begins (a Trainer on time where the
// recording's lagged: it reported a resumed job's Pods active before the
// SDK's next write where the recording reported them only after Kueue
// preempted it, and a wait from its own step for "resumed, none active"
// held 30 s; kueue-readmission-new-flavor's import, shaken), so the
// wait's states count from that step's start (reachedSince). A write of
// a concurrently group is not a step of spec.steps: the step before the
// group stands for it. "" when there is none.
func (b *builder) sinceStep(name string, came func(o *write) bool) string {
	var since string
	for _, st := range b.res.Scenario.Spec.Steps {
		for _, w := range b.stepWrites[st.Name] {
			if w.kind == trainJobKind && w.name == name && came(w) {
				since = st.Name
			}
		}
	}
	return since
}

// before reports whether write o came before the manager's write next as
// the waits before next keep it: stored before it (a lower
// resourceVersion), or, when either has none (a refusal), answered before
// next was received. A component's write answered after next was received
// but stored before it was there when next was stored: the Trainer's
// report of real-kueue-readmission-to-another-flavor's low job active,
// which the scenario waits for before it creates the high job, was
// answered 48 ms after the create was received, in a round trip of the
// corpus; the import waited for the report before it, and a shaken replay
// created the high job before the Trainer reported the low one active:
// Kueue cleared its entry before the Trainer suspended the JobSet, the
// order the scenario says keeps the low job's GPUs.
//
// Two writes answered with the same resourceVersion are one that stored
// it and no-ops after it (a no-op answers with the version it found): the
// one answered first came first. A re-send of an entry the webhook left as
// it was answered with the Trainer's status patch's version; taken for a
// write after it, that status was not waited for, and a replay sent the
// re-send before the Trainer's patch, then an update from the re-send's
// answer, refused 409 (timestamp-server-time-survives-resend's import,
// shaken, in CI's round trip).
func before(o, next *write) bool {
	a, errA := strconv.ParseUint(o.rv, 10, 64)
	b, errB := strconv.ParseUint(next.rv, 10, 64)
	if errA == nil && errB == nil && a != b {
		return a < b
	}
	return !o.ev.Completed.After(next.ev.Received)
}

// reactionsFrom is when the API server answered the first write to
// TrainJob name after next, a manager's or a component's change of its
// spec (zero: none): the components' statuses of it
// received after that may be their reactions to the write, which on replay
// cannot come before next, but can look like a state from before it that
// the replay passed through and the recording did not. A wait before the
// clear of Kueue's entry accepted the Trainer's "resumed, 1 active" that
// the recording had after Kueue's readmission (and before the clear, only
// "resumed, 0 active"); a replay whose Trainer had reported "resumed, 1
// active" before the preemption passed that wait before the Trainer saw
// the preemption (kueue-readmission-new-flavor's import, in the shaken
// round trip). Statuses up to it are the components' own progress (Pods
// that start, Jobs that end), which a replay can be further on with.
//
// A component's change of the TrainJob's spec after next is a reaction
// too (Kueue's preemption that a write to another TrainJob of its queue
// brings): real-kueue-readmission-to-another-flavor's wait for the low
// job's Job active, before the SDK creates the high one, accepted "none
// active, one suspended", the Trainer's report after Kueue's preemption,
// which a replay's Trainer also writes before Kueue first resumes the job;
// a shaken replay created the high job before the low one ran (the
// corpus's round trip).
//
// A write that changed nothing (refused, or a no-op that answered with the
// version it found) has no reactions: the Trainer's report of the running
// job's Pods active, which came after four refused changes of
// suspension-change-while-running, was left out of the wait before the
// first of them, which then asked for the "none active yet" the recording's
// Trainer had reported first; a replay's Trainer, which saw the Job active
// at once, never wrote it (CI's round trip, under load).
func reactionsFrom(name string, next *write, writes []*write) time.Time {
	for _, o := range writes {
		if o != next && o.kind == trainJobKind && o.name == name && !o.status && o.ev.Received.After(next.ev.Received) && changed(o, writes) {
			return o.ev.Completed
		}
	}
	return time.Time{}
}

// changed reports whether w changed what the components read of its
// object: its spec, labels or annotations differ from the version before
// it. A refusal changes nothing; nor does a no-op (it answers with the
// version it found) or a re-send that changes only managedFields (an apply
// of identical content by another field manager, which the API server
// stores as a new version): suspension-identical-resend-while-running's
// re-sends after the Trainer's report of its Job "none active yet" (which
// a replay's Trainer, seeing the Job active at once, never wrote) were
// taken for changes, and its report of the Job active after them for a
// reaction the wait before them could not accept (CI's round trip). True
// when the log cannot tell (no answer recorded, no version before).
func changed(w *write, writes []*write) bool {
	if w.rv == "" {
		// Refused, or its answer not recorded (level Request).
		return w.ev.ResponseStatus == nil || w.ev.ResponseStatus.Code < 300
	}
	now := responseObject(w)
	rv, err := strconv.ParseUint(w.rv, 10, 64)
	if now == nil || err != nil {
		return true
	}
	var prior map[string]any
	var priorRV uint64
	for _, o := range writes {
		orv, err := strconv.ParseUint(o.rv, 10, 64)
		if o == w || o.kind != w.kind || o.name != w.name || err != nil || orv > rv || orv == rv && !o.ev.Completed.Before(w.ev.Completed) || prior != nil && orv < priorRV {
			continue
		}
		if obj := responseObject(o); obj != nil {
			prior, priorRV = obj, orv
		}
	}
	if prior == nil {
		return true
	}
	read := func(obj map[string]any) []any {
		return []any{obj["spec"], nested(obj, "metadata", "labels"), nested(obj, "metadata", "annotations")}
	}
	return !reflect.DeepEqual(read(prior), read(now))
}

// telling returns fields, with the conditions added when the status
// writes[at] left has in fields a value that a write of the component
// before it had too: a wait on fields alone would hold on that earlier
// state. After a resume and Kueue's preemption the jobs' counts are back
// at one suspended, none active, as before the resume; a Trainer that had
// yet to report the resumed job active (shaken, it lags by seconds) still
// showed them when the import's wait for the preemption's report began,
// and the write after went before the Trainer's reports of the
// preemption, which came between it and the write sent from its answer,
// refused 409 (kueue-readmission-new-flavor's import, in the shaken round
// trip). The Suspended condition, which the Trainer sets from the spec
// alone once it sees the preemption, tells the two apart.
func telling(name string, fields []string, at int, writes []*write) []string {
	if slices.Contains(fields, "conditions") {
		return fields
	}
	status, ok := statusOf(writes[at], fields)
	if !ok {
		return fields
	}
	for _, o := range writes[:at] {
		if o.kind != trainJobKind || o.name != name || !(o.component || o.status) {
			continue
		}
		if s, ok := statusOf(o, fields); ok && reflect.DeepEqual(s, status) {
			return append([]string{"conditions"}, fields...)
		}
	}
	return fields
}

// admittedBefore keeps the order the log shows between Kueue's admission
// of another TrainJob, name, and the next manager's write w: a step that
// waits until the Trainer has reported name's jobs as it last did before
// w (or as it did later). The admission's gate only lets Kueue admit once
// the JobSet and Jobs are made; without this, w (another TrainJob of the
// queue, say) is sent while Kueue has yet to admit name, and Kueue admits
// the two in another order (real-kueue-readmission-to-another-flavor's
// import, once in a round trip: the high job admitted first, the low one
// never preempted). nil when the log has no such report before w.
func (b *builder) admittedBefore(name string, w *write, writes []*write) *v1alpha1.Step {
	at := -1
	for i, o := range writes {
		if o.kind == trainJobKind && o.name == name && o.rv != "" && (o.component || o.status) && before(o, w) {
			if _, ok := statusOf(o, []string{"jobsStatus"}); ok {
				at = i
			}
		}
	}
	if at < 0 {
		return nil
	}
	return b.statusWait(name, []string{"jobsStatus"}, at, w, writes, " (Kueue admitted it before)")
}

// statusOf is the fields of the status w's answer carried, without times,
// messages and readiness (stable); false when it has none of them.
func statusOf(w *write, fields []string) (map[string]any, bool) {
	status, ok := responseObject(w)["status"].(map[string]any)
	if !ok {
		return nil, false
	}
	status = stable(status).(map[string]any)
	out := map[string]any{}
	for _, f := range fields {
		if v, ok := status[f]; ok {
			out[f] = v
		}
	}
	return out, len(out) > 0
}

// volatileKeys are map keys whose values a component derives from what
// differs on replay: Kueue names a Workload after its job's UID.
var volatileKeys = []string{"kueue.x-k8s.io/workload"}

// portable is v without what differs on replay: the values of
// volatileKeys, and strings that hold the recorded namespace's name (a
// ClusterQueue simctl named after it, in Kueue's label of the queue).
func portable(v any, namespace string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if s, ok := x.(string); slices.Contains(volatileKeys, k) || ok && namespace != "" && strings.Contains(s, namespace) {
				continue
			}
			out[k] = portable(x, namespace)
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for _, x := range t {
			out = append(out, portable(x, namespace))
		}
		return out
	}
	return v
}

// stable is a status v without what differs on replay: times, messages,
// and how many Pods were ready (a count of the TrainJob's jobs or the
// JobSet's replicated jobs: when a kubelet reported readiness, which on
// replay comes earlier or later against the managers' writes, and which
// nothing a manager writes depends on, unlike the active count).
func stable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if k == "message" || k == "ready" || strings.HasSuffix(k, "Time") || strings.HasSuffix(k, "Timestamp") {
				continue
			}
			out[k] = stable(x)
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for _, x := range t {
			out = append(out, stable(x))
		}
		return out
	}
	return v
}

// overlaps reports whether w was received before a write of g was
// answered.
func overlaps(g []*write, w *write) bool {
	for _, o := range g {
		if w.ev.Received.Before(o.ev.Completed) {
			return true
		}
	}
	return false
}

func indexOf(writes []*write, w *write) int {
	for i, o := range writes {
		if o == w {
			return i
		}
	}
	return len(writes)
}

// step is w's step, and the reads it needs first (a get its update or
// patch is sent from, which goes before w's group). before are every
// user's writes before w.
func (b *builder) step(w *write, before []*write) (v1alpha1.Step, []v1alpha1.Step, error) {
	ev := w.ev
	actor := b.actor(ev)
	target := v1alpha1.Target{Kind: w.kind, Name: w.name}
	if w.kind != trainJobKind {
		target.APIVersion = w.apiVersion
	}
	st := v1alpha1.Step{Actor: actor}
	var reads []v1alpha1.Step
	verb := ev.Verb
	switch ev.Verb {
	case "create":
		st.Create = cleanObject(ev.RequestObject)
	case "delete":
		st.Delete = &target
	case "update":
		obj := cleanObject(ev.RequestObject)
		rv := metadataString(ev.RequestObject, "resourceVersion")
		from, base, read, literal := b.readFrom(w, rv, before)
		reads = append(reads, read...)
		switch {
		case from != "" && base != nil:
			// The change from the object as the log has it at rv to the
			// request, both as the server wrote them.
			var sent map[string]any
			_ = json.Unmarshal(ev.RequestObject, &sent)
			set, err := mergeDiff(base, sent)
			if err != nil {
				return st, nil, fmt.Errorf("%s: %w", ev.where(), err)
			}
			st.Update = &v1alpha1.Update{From: from, Set: set}
		case from != "":
			// The object at rv is not in the log: what was sent, on the
			// object read.
			st.Update = &v1alpha1.Update{From: from, Set: obj}
		case literal:
			st.Update = &v1alpha1.Update{Object: withRV(obj, rv)}
		default:
			st.Update = &v1alpha1.Update{Object: obj}
		}
	case "patch":
		var body any
		if err := json.Unmarshal(ev.RequestObject, &body); err != nil {
			return st, nil, inputErrorf("%s: the patch's body: %v", ev.where(), err)
		}
		switch typed := body.(type) {
		case []any:
			ops, rv := jsonPatchRV(typed)
			p := &v1alpha1.Patch{Type: v1alpha1.PatchJSON, Target: target, Body: ops}
			verb = "JSON-patches"
			b.patchRV(w, p, rv, before, &reads)
			st.Patch = p
		case map[string]any:
			if isApply(ev, typed) {
				st.Apply = cleanMap(typed)
				st.Force = ev.query("force") == "true"
				verb = "applies"
				if st.Force {
					verb = "applies with force"
				}
				break
			}
			rv := ""
			if md, ok := typed["metadata"].(map[string]any); ok {
				rv, _ = md["resourceVersion"].(string)
				delete(md, "resourceVersion")
				if len(md) == 0 {
					delete(typed, "metadata")
				}
			}
			p := &v1alpha1.Patch{Type: v1alpha1.PatchMerge, Target: target, Body: typed}
			verb = "merge-patches"
			b.patchRV(w, p, rv, before, &reads)
			st.Patch = p
		default:
			return st, nil, inputErrorf("%s: a patch whose body is a %T", ev.where(), body)
		}
	}
	if fv := ev.query("fieldValidation"); fv != "" {
		st.FieldValidation = fv
	}
	b.n++ // after its reads
	st.Name = fmt.Sprintf("%d: %s %s %s %s", b.n, actor, verbWord(verb), w.kind, w.name)
	if s := ev.ResponseStatus; s != nil && s.Code >= 300 {
		st.ExpectError = &v1alpha1.ExpectError{Status: s.Code, Reason: s.Reason, MessageContains: portableMessage(s.Message, b.namespace)}
		st.Name += fmt.Sprintf(", refused %d %s", s.Code, s.Reason)
	}
	w.step = st.Name
	if b.stepWrites == nil {
		b.stepWrites = map[string][]*write{}
	}
	b.stepWrites[st.Name] = append(b.stepWrites[st.Name], w)
	b.res.Writes++
	return st, reads, nil
}

// patchRV makes p carry rv as the original did: read from the step rv
// came from, or from a read, or as it was sent.
func (b *builder) patchRV(w *write, p *v1alpha1.Patch, rv string, before []*write, reads *[]v1alpha1.Step) {
	if rv == "" {
		return
	}
	from, _, read, literal := b.readFrom(w, rv, before)
	*reads = append(*reads, read...)
	switch {
	case from != "":
		p.ResourceVersionFrom = from
	case literal:
		p.Body = withRVBody(p.Body, rv)
	}
}

// readFrom says where a write that carried resourceVersion rv reads it
// from on replay: the step whose answer had it; else, when the original
// was refused 409 (rv was stale, and any other version is too), rv itself
// (literal); else a get just before the write's group, which reads what
// the write then read (a resourceVersion of a component's write, or of
// one the log lacks), with a note. base is the object as the log has it
// at rv, which the write's change is taken against; nil when the log
// lacks it.
func (b *builder) readFrom(w *write, rv string, before []*write) (from string, base map[string]any, reads []v1alpha1.Step, literal bool) {
	if rv == "" {
		return "", nil, nil, false
	}
	if src, ok := b.byRV[rv]; ok && src.step != "" {
		return src.step, responseObject(src), nil, false
	}
	why := "no write of the log answered with it"
	for _, o := range before {
		if o.rv == rv {
			who, _ := o.ev.user()
			why = "a write by " + who + " answered with it"
			base = responseObject(o)
		}
	}
	if w.read != "" {
		b.note(fmt.Sprintf("%s: the %s carried resourceVersion %s (%s), refused 409: replayed from a read just before %q, the change that made it stale", w.ev.where(), w.ev.Verb, rv, why, w.readBefore.step))
		return w.read, base, nil, false
	}
	if s := w.ev.ResponseStatus; s != nil && s.Code == 409 {
		return "", nil, nil, true
	}
	get := b.readStep(w)
	b.note(fmt.Sprintf("%s: the %s carried resourceVersion %s (%s): replayed from a read just before it", w.ev.where(), w.ev.Verb, rv, why))
	return get.Name, base, []v1alpha1.Step{get}, false
}

// readStep is a step in which w's actor reads w's object.
func (b *builder) readStep(w *write) v1alpha1.Step {
	b.n++
	target := &v1alpha1.Target{Kind: w.kind, Name: w.name}
	if w.kind != trainJobKind {
		target.APIVersion = w.apiVersion
	}
	actor := b.actor(w.ev)
	return v1alpha1.Step{
		Name:  fmt.Sprintf("%d: %s reads %s %s", b.n, actor, w.kind, w.name),
		Actor: actor,
		Get:   target,
	}
}

// staleReads places the reads of refused writes whose resourceVersion a
// component's write answered with (the Trainer's status, say): the
// manager read the object after that write, and a manager's change made
// the read stale before the refused write was sent. On replay the read
// goes just before that change (readBefore), so that the write carries a
// version stale on replay too: the original number is another cluster's,
// and could be the replay's current one. Without a manager's change in
// between, the write is sent with the original number (readFrom).
func (b *builder) staleReads(managers, writes []*write) {
	for _, w := range managers {
		if s := w.ev.ResponseStatus; s == nil || s.Code != 409 {
			continue
		}
		rv := carriedRV(w)
		if rv == "" || slices.ContainsFunc(managers, func(o *write) bool { return o.rv == rv }) {
			continue
		}
		i := slices.IndexFunc(writes, func(o *write) bool { return o.rv == rv && o.kind == w.kind && o.name == w.name })
		end := indexOf(writes, w)
		if i < 0 || i > end {
			continue
		}
		prev := rv
		for _, o := range writes[i+1 : end] {
			if o.kind != w.kind || o.name != w.name || o.rv == "" {
				continue
			}
			if !(o.component || o.status) && o.rv != prev && slices.Contains(managers, o) {
				w.readBefore = o
				break
			}
			prev = o.rv
		}
	}
}

// carriedRV is the resourceVersion w's request carried, "" none.
func carriedRV(w *write) string {
	var body any
	if json.Unmarshal(w.ev.RequestObject, &body) != nil {
		return ""
	}
	switch t := body.(type) {
	case []any:
		_, rv := jsonPatchRV(t)
		return rv
	case map[string]any:
		if w.ev.Verb == "update" || w.ev.Verb == "patch" && !isApply(w.ev, t) {
			md, _ := t["metadata"].(map[string]any)
			rv, _ := md["resourceVersion"].(string)
			return rv
		}
	}
	return ""
}

// requestObject is the object w's request carried, nil without one.
func requestObject(w *write) map[string]any { return decodeObject(w.ev.RequestObject) }

// responseObject is the object w's answer carried, nil without one.
func responseObject(w *write) map[string]any { return decodeObject(w.ev.ResponseObject) }

// decodeObject is a body of an audit event as an object, nil when it is
// none.
func decodeObject(data []byte) map[string]any {
	var obj map[string]any
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	return obj
}

// actor is the name of the actor of ev's user and field manager, made on
// first sight and added to actorList: named after the field manager, with,
// unless it is the harness's own administrator, its user and groups,
// impersonated on replay.
func (b *builder) actor(ev *event) string {
	user, groups := ev.user()
	key := actorKey{user, ev.fieldManager()}
	if name, ok := b.actors[key]; ok {
		return name
	}
	name := dnsName(key.fieldManager)
	for i := 2; slices.ContainsFunc(b.actorList, func(a v1alpha1.Actor) bool { return a.Name == name }); i++ {
		name = fmt.Sprintf("%s-%d", dnsName(key.fieldManager), i)
	}
	b.actors[key] = name
	a := v1alpha1.Actor{Name: name, FieldManager: key.fieldManager}
	if !harnessAdmin(user, groups) {
		a.User = user
		for _, g := range groups {
			if g != "system:authenticated" {
				a.Groups = append(a.Groups, g)
			}
		}
		if !slices.Contains(groups, "system:masters") {
			b.note(fmt.Sprintf("actor %s writes as user %s, impersonated on replay: give the user the RBAC it had (a RoleBinding in spec.setup), or its writes are refused 403", name, user))
		}
	}
	b.actorList = append(b.actorList, a)
	return name
}

// harnessAdmin reports whether user is the admin of a cluster simctl
// starts, as which actors without a user write: envtest's admin (of
// system:masters), or kubeadm's kubernetes-admin, a kind cluster's (of
// kubeadm:cluster-admins, which kubeadm binds to cluster-admin; of
// system:masters before Kubernetes 1.29). A replay writes as its own
// cluster's admin instead.
func harnessAdmin(user string, groups []string) bool {
	switch user {
	case "admin":
		return slices.Contains(groups, "system:masters")
	case "kubernetes-admin":
		return slices.Contains(groups, "kubeadm:cluster-admins") || slices.Contains(groups, "system:masters")
	}
	return false
}

// finalExpectation is the step that expects each TrainJob as the log
// leaves it: its runtimePatches entries by their last answer, or gone
// after a delete. Nil when the log has no answer of a TrainJob.
func (b *builder) finalExpectation(writes []*write) *v1alpha1.Step {
	last := map[string]*write{}
	for _, w := range writes {
		if w.kind == trainJobKind && w.ev.ResponseStatus != nil && w.ev.ResponseStatus.Code < 300 && (w.ev.Verb == "delete" || len(w.ev.ResponseObject) > 0) {
			if prev := last[w.name]; prev == nil || !storedBefore(w, prev) {
				last[w.name] = w
			}
		}
	}
	var objects []v1alpha1.ObjectExpectation
	var owners []v1alpha1.OwnerExpectation
	for _, name := range b.trainJobs {
		w, ok := last[name]
		if !ok {
			continue
		}
		target := v1alpha1.Target{Kind: "TrainJob", Name: name}
		if w.ev.Verb == "delete" {
			objects = append(objects, v1alpha1.ObjectExpectation{Target: target, Absent: true})
			continue
		}
		var obj struct {
			Metadata struct {
				ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields"`
			} `json:"metadata"`
			Spec struct {
				RuntimePatches []map[string]any `json:"runtimePatches"`
			} `json:"spec"`
		}
		if json.Unmarshal(w.ev.ResponseObject, &obj) != nil {
			continue
		}
		entries := []any{}
		for _, e := range obj.Spec.RuntimePatches {
			delete(e, "time") // when the entry was written: another time on replay
			entries = append(entries, portable(e, b.namespace))
			owners = append(owners, entryOwners(target, e, obj.Metadata.ManagedFields)...)
		}
		exp := v1alpha1.ObjectExpectation{Target: target}
		if len(entries) > 0 {
			exp.Match = v1alpha1.Object{"spec": map[string]any{"runtimePatches": entries}}
		}
		objects = append(objects, exp)
	}
	if len(objects) == 0 {
		return nil
	}
	b.n++
	return &v1alpha1.Step{
		Name:   fmt.Sprintf("%d: the TrainJobs end as the log leaves them, their entries owned as there", b.n),
		Expect: &v1alpha1.Expect{Objects: objects, Owners: owners},
	}
}

// storedBefore reports whether write w's answer holds an earlier state of
// its object than write o's: a lower resourceVersion. The log is in the
// order the server completed the writes, which is not always the order it
// stored them in: a status write of the Trainer's stored before a
// manager's change of the spec can be answered after it, with the spec as
// it was (kueue-preemption-clears-entry's clear, recorded in a round
// trip: the Trainer's status patch answered 2 ms later held Kueue's entry
// as it was before the clear). False when either resourceVersion is not a
// number (a delete's answer).
func storedBefore(w, o *write) bool {
	a, errA := strconv.ParseUint(w.rv, 10, 64)
	b, errB := strconv.ParseUint(o.rv, 10, 64)
	return errA == nil && errB == nil && a < b
}

// entryOwners expects runtimePatches entry e of target owned by the field
// managers whose managedFields held it (as reports count owners): only by
// it when one did. None when no manager held it (an entry a webhook added
// on admission).
func entryOwners(target v1alpha1.Target, e map[string]any, managed []metav1.ManagedFieldsEntry) []v1alpha1.OwnerExpectation {
	manager, _ := e["manager"].(string)
	if manager == "" {
		return nil
	}
	path := fieldpath.Path{fieldpath.Field("spec"), fieldpath.Field("runtimePatches"), fieldpath.Item("manager", manager)}
	managers, err := fieldpath.Owners(managed, path)
	if err != nil {
		return nil
	}
	var out []v1alpha1.OwnerExpectation
	for _, m := range managers {
		out = append(out, v1alpha1.OwnerExpectation{Target: target, Field: path.String(), Manager: m, Only: len(managers) == 1})
	}
	return out
}

func (b *builder) note(s string) { b.res.Notes = append(b.res.Notes, s) }

// isApply tells a server-side apply from a merge patch, which the audit
// event does not name (the content type is not recorded): an apply's
// body is a whole object, with apiVersion and kind, or it was forced.
func isApply(ev *event, body map[string]any) bool {
	if ev.query("force") != "" {
		return true
	}
	_, api := body["apiVersion"]
	_, kind := body["kind"]
	return api && kind
}

// jsonPatchRV returns a JSON patch's operations less those on
// /metadata/resourceVersion, and the resourceVersion they tested or set.
func jsonPatchRV(ops []any) ([]any, string) {
	var out []any
	rv := ""
	for _, op := range ops {
		m, _ := op.(map[string]any)
		if m != nil && m["path"] == "/metadata/resourceVersion" {
			rv, _ = m["value"].(string)
			continue
		}
		out = append(out, op)
	}
	return out, rv
}

// cleanObject is a request's object as a step sends it: without what the
// server sets or the replay's namespace changes. raw is an object (build
// checked it).
func cleanObject(raw json.RawMessage) v1alpha1.Object {
	return cleanMap(decodeObject(raw))
}

func cleanMap(obj map[string]any) v1alpha1.Object {
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range []string{"namespace", "resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink"} {
			delete(md, f)
		}
	}
	delete(obj, "status")
	return obj
}

// withRV is obj carrying resourceVersion rv, "" none.
func withRV(obj v1alpha1.Object, rv string) v1alpha1.Object {
	if rv == "" {
		return obj
	}
	out := v1alpha1.Object{}
	for k, v := range obj {
		out[k] = v
	}
	md := map[string]any{}
	if m, ok := obj["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	md["resourceVersion"] = rv
	out["metadata"] = md
	return out
}

// withRVBody is a patch body carrying rv as the original did.
func withRVBody(body any, rv string) any {
	switch b := body.(type) {
	case map[string]any:
		return map[string]any(withRV(b, rv))
	case []any:
		return append(slices.Clone(b), map[string]any{"op": "replace", "path": "/metadata/resourceVersion", "value": rv})
	}
	return body
}

// volatile matches what differs in a refusal's message on replay: a time
// the server wrote, an object's UID.
var volatile = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// portableMessage is the part of a refusal's message that holds on
// replay: the longest stretch without the original namespace's name, a
// time or a UID.
func portableMessage(msg, namespace string) string {
	if namespace != "" {
		msg = strings.ReplaceAll(msg, namespace, "\x00")
	}
	msg = volatile.ReplaceAllString(msg, "\x00")
	best := ""
	for _, part := range strings.Split(msg, "\x00") {
		if p := strings.TrimSpace(part); len(p) > len(best) {
			best = p
		}
	}
	return best
}

// fieldErrors are the kinds of a field error in a refusal's message
// (k8s.io/apimachinery's field.ErrorType).
var fieldErrors = []string{": Forbidden", ": Invalid value", ": Required value", ": Duplicate value", ": Unsupported value", ": Too long", ": Too many"}

// raceMessage is msg up to the kind of its first field error: the part of
// a raced refusal's message that does not depend on the race.
func raceMessage(msg string) string {
	cut := -1
	for _, kind := range fieldErrors {
		if i := strings.Index(msg, kind); i >= 0 && (cut < 0 || i+len(kind) < cut) {
			cut = i + len(kind)
		}
	}
	if cut < 0 {
		return msg
	}
	return msg[:cut]
}

func verbWord(verb string) string {
	switch verb {
	case "create":
		return "creates"
	case "update":
		return "updates"
	case "delete":
		return "deletes"
	}
	return verb
}

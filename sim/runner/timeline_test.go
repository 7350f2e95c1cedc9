package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// u decodes a YAML object into what an informer delivers, integers as
// int64; "" is nil.
func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	if y == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("failed to decode test object: %v", err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatalf("failed to decode test object: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestReactions(t *testing.T) {
	const (
		jobSet = `
metadata: {name: llm, generation: 1}
spec:
  suspend: true
  replicatedJobs: [{name: node, replicas: 1}, {name: dataset-initializer}]
`
		jobSetResumed = `
metadata: {name: llm, generation: 2}
spec:
  suspend: false
  replicatedJobs: [{name: node, replicas: 1}, {name: dataset-initializer}]
`
		jobSetTolerations = `
metadata: {name: llm, generation: 3}
spec:
  suspend: false
  replicatedJobs: [{name: node, replicas: 1, tolerations: [{key: gpu}]}, {name: dataset-initializer}]
`
		// managedFields entries: the Trainer's apply, Kueue's update of
		// spec.suspend.
		trainerApply = `{manager: trainer, operation: Apply, time: "2026-11-26T10:00:00Z", fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:replicatedJobs": {}}}}`
		kueueSuspend = `{manager: kueue, operation: Update, time: "2026-11-26T10:00:05Z", fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:suspend": {}}}}`

		jobSetApplied          = `{metadata: {name: llm, generation: 2, managedFields: [` + trainerApply + `]}, spec: {suspend: false}}`
		jobSetSuspendedByKueue = `{metadata: {name: llm, generation: 3, managedFields: [` + trainerApply + `, ` + kueueSuspend + `]}, spec: {suspend: true}}`
		jobSetResumedByKueue   = `{metadata: {name: llm, generation: 4, managedFields: [` + trainerApply + `, ` + kueueSuspend + `]}, spec: {suspend: false}}`
		suspendedJob           = `{metadata: {name: llm-node-0}, spec: {suspend: true, parallelism: 2, completions: 2}}`
		runningJob             = `{metadata: {name: llm-node-0}, spec: {suspend: false, parallelism: 2, completions: 2}}`
		completeJob            = `{metadata: {name: llm-node-0}, spec: {suspend: false}, status: {conditions: [{type: Complete, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods}]}}`
		pendingPod             = `{metadata: {name: p, ownerReferences: [{kind: Job, name: llm-node-0, controller: true, apiVersion: batch/v1, uid: x}]}, status: {phase: Pending}}`
		boundPod               = `{metadata: {name: p}, spec: {nodeName: n1}, status: {phase: Pending, conditions: [{type: PodScheduled, status: "True"}]}}`
		runningPod             = `{metadata: {name: p}, spec: {nodeName: n1}, status: {phase: Running, conditions: [{type: PodScheduled, status: "True"}]}}`
		unschedPod             = `{metadata: {name: p}, status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available"}]}}`
		unschedPod2            = `{metadata: {name: p}, status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/5 nodes are available"}]}}`
		suspendedTJ            = `{metadata: {name: llm}, status: {conditions: [{type: Suspended, status: "True", reason: Suspended, message: TrainJob is suspended}]}}`
		suspendedTJ2           = `{metadata: {name: llm}, status: {conditions: [{type: Suspended, status: "True", reason: Suspended, message: another message}]}}`
		resumedTJ              = `{metadata: {name: llm}, status: {conditions: [{type: Suspended, status: "False", reason: Resumed, message: TrainJob is resumed}]}}`
	)
	for _, tc := range []struct {
		name, kind, old, obj string
		want                 []results.TimelineEntry
	}{
		{
			name: "JobSet created", kind: "JobSet", obj: jobSet,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "jobset-created", Object: "JobSet/llm", Summary: "JobSet llm created (suspend: true)", Detail: "replicatedJobs: node x1, dataset-initializer x1"}},
		},
		{
			name: "JobSet resumed", kind: "JobSet", old: jobSet, obj: jobSetResumed,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "jobset-resumed", Object: "JobSet/llm", Summary: "JobSet llm resumed", Detail: "spec.suspend: true → false"}},
		},
		{
			name: "JobSet suspended", kind: "JobSet", old: jobSetResumed, obj: jobSet,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "jobset-suspended", Object: "JobSet/llm", Summary: "JobSet llm suspended", Detail: "spec.suspend: false → true"}},
		},
		{
			name: "JobSet spec changed", kind: "JobSet", old: jobSetResumed, obj: jobSetTolerations,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "jobset-changed", Object: "JobSet/llm", Summary: "JobSet llm spec changed (generation 3)",
				Detail: `spec.replicatedJobs[name=node].tolerations: (absent) → [{"key":"gpu"}]`}},
		},
		{
			// Not the Trainer: the lane is the manager whose managedFields
			// entry the write changed.
			name: "JobSet suspended by another manager", kind: "JobSet", old: jobSetApplied, obj: jobSetSuspendedByKueue,
			want: []results.TimelineEntry{{Lane: "kueue", Kind: "jobset-suspended", Object: "JobSet/llm", Summary: "JobSet llm suspended", Detail: "spec.suspend: false → true"}},
		},
		{
			// A write within the same second that leaves every entry as it
			// was: the owner of spec.suspend.
			name: "JobSet suspended, entries unchanged", kind: "JobSet", old: jobSetSuspendedByKueue, obj: jobSetResumedByKueue,
			want: []results.TimelineEntry{{Lane: "kueue", Kind: "jobset-resumed", Object: "JobSet/llm", Summary: "JobSet llm resumed", Detail: "spec.suspend: true → false"}},
		},
		{name: "JobSet status only", kind: "JobSet", old: jobSetResumed, obj: jobSetResumed},
		{
			name: "JobSet deleted", kind: "JobSet", old: jobSet,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "jobset-deleted", Object: "JobSet/llm", Summary: "JobSet llm deleted"}},
		},
		{
			name: "TrainJob condition", kind: "TrainJob", obj: suspendedTJ,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "trainjob-condition", Object: "TrainJob/llm", Summary: "TrainJob llm: condition Suspended=True (Suspended)", Detail: "TrainJob is suspended"}},
		},
		{name: "TrainJob condition message only", kind: "TrainJob", old: suspendedTJ, obj: suspendedTJ2},
		{
			name: "TrainJob condition flips", kind: "TrainJob", old: suspendedTJ, obj: resumedTJ,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "trainjob-condition", Object: "TrainJob/llm", Summary: "TrainJob llm: condition Suspended=False (Resumed)", Detail: "TrainJob is resumed"}},
		},
		{name: "TrainJob deleted", kind: "TrainJob", old: suspendedTJ},
		{
			name: "Job created", kind: "Job", obj: suspendedJob,
			want: []results.TimelineEntry{{Lane: "jobset", Kind: "job-created", Object: "Job/llm-node-0", Summary: "Job llm-node-0 created (suspend: true)", Detail: "parallelism 2, completions 2"}},
		},
		{
			name: "Job resumed", kind: "Job", old: suspendedJob, obj: runningJob,
			want: []results.TimelineEntry{{Lane: "jobset", Kind: "job-resumed", Object: "Job/llm-node-0", Summary: "Job llm-node-0 resumed"}},
		},
		{
			name: "Job suspended", kind: "Job", old: runningJob, obj: suspendedJob,
			want: []results.TimelineEntry{{Lane: "jobset", Kind: "job-suspended", Object: "Job/llm-node-0", Summary: "Job llm-node-0 suspended"}},
		},
		{
			name: "Job complete", kind: "Job", old: runningJob, obj: completeJob,
			want: []results.TimelineEntry{{Lane: "job-controller", Kind: "job-condition", Object: "Job/llm-node-0", Summary: "Job llm-node-0 Complete (CompletionsReached)", Detail: "Reached expected number of succeeded pods"}},
		},
		{name: "Job complete again", kind: "Job", old: completeJob, obj: completeJob},
		{
			name: "Job deleted", kind: "Job", old: runningJob,
			want: []results.TimelineEntry{{Lane: "jobset", Kind: "job-deleted", Object: "Job/llm-node-0", Summary: "Job llm-node-0 deleted"}},
		},
		{
			name: "Pod created", kind: "Pod", obj: pendingPod,
			want: []results.TimelineEntry{{Lane: "job-controller", Kind: "pod-created", Object: "Pod/p", Summary: "Pod p created", Detail: "owner: Job/llm-node-0"}},
		},
		{
			name: "Pod seen already bound and running", kind: "Pod", obj: runningPod,
			want: []results.TimelineEntry{
				{Lane: "job-controller", Kind: "pod-created", Object: "Pod/p", Summary: "Pod p created"},
				{Lane: "scheduler", Kind: "pod-bound", Object: "Pod/p", Summary: "Pod p bound to node n1"},
				{Lane: "kwok", Kind: "pod-phase", Object: "Pod/p", Summary: "Pod p Running"},
			},
		},
		{
			name: "Pod bound", kind: "Pod", old: pendingPod, obj: boundPod,
			want: []results.TimelineEntry{{Lane: "scheduler", Kind: "pod-bound", Object: "Pod/p", Summary: "Pod p bound to node n1"}},
		},
		{
			name: "Pod running", kind: "Pod", old: boundPod, obj: runningPod,
			want: []results.TimelineEntry{{Lane: "kwok", Kind: "pod-phase", Object: "Pod/p", Summary: "Pod p Running"}},
		},
		{
			name: "Pod unschedulable", kind: "Pod", old: pendingPod, obj: unschedPod,
			want: []results.TimelineEntry{{Lane: "scheduler", Kind: "pod-unschedulable", Object: "Pod/p", Summary: "Pod p not scheduled: Unschedulable", Detail: "0/3 nodes are available"}},
		},
		{name: "Pod still unschedulable, another message", kind: "Pod", old: unschedPod, obj: unschedPod2},
		{
			name: "Pod deleted", kind: "Pod", old: runningPod,
			want: []results.TimelineEntry{{Lane: "job-controller", Kind: "pod-deleted", Object: "Pod/p", Summary: "Pod p deleted"}},
		},
		{
			name: "event of the scheduler", kind: "Event",
			obj: `{metadata: {name: e}, type: Normal, reason: Scheduled, message: "Successfully assigned ns/p to n1", reportingComponent: default-scheduler, involvedObject: {kind: Pod, name: p}}`,
			want: []results.TimelineEntry{{Lane: "scheduler", Kind: "event", Object: "Pod/p", Summary: "event Scheduled on Pod/p: Successfully assigned ns/p to n1",
				Detail: "Normal event from default-scheduler\nSuccessfully assigned ns/p to n1"}},
		},
		{
			name: "warning event of the trainer", kind: "Event",
			obj: `{metadata: {name: e}, type: Warning, reason: Failed, message: "line one\nline two", source: {component: trainer-trainjob-controller}, involvedObject: {kind: TrainJob, name: llm}}`,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "warning-event", Object: "TrainJob/llm", Summary: "event Failed on TrainJob/llm: line one",
				Detail: "Warning event from trainer-trainjob-controller\nline one\nline two"}},
		},
		{
			name: "event of another component", kind: "Event",
			obj:  `{metadata: {name: e}, type: Normal, reason: X, message: m, source: {component: taint-eviction-controller}, involvedObject: {kind: Pod, name: p}}`,
			want: []results.TimelineEntry{{Lane: "taint-eviction-controller", Kind: "event", Object: "Pod/p", Summary: "event X on Pod/p: m", Detail: "Normal event from taint-eviction-controller\nm"}},
		},
		{
			name: "event counted again", kind: "Event",
			old: `{metadata: {name: e}, type: Normal, reason: X, count: 1}`, obj: `{metadata: {name: e}, type: Normal, reason: X, count: 2}`,
		},
		{
			name: "PodGroup created", kind: "PodGroup", obj: `{metadata: {name: llm}}`,
			want: []results.TimelineEntry{{Lane: "trainer", Kind: "podgroup-created", Object: "PodGroup/llm", Summary: "PodGroup llm created"}},
		},
		{
			name: "PodGroup phase", kind: "PodGroup", old: `{metadata: {name: llm}, status: {phase: Pending}}`, obj: `{metadata: {name: llm}, status: {phase: Running}}`,
			want: []results.TimelineEntry{{Lane: "scheduler", Kind: "podgroup-phase", Object: "PodGroup/llm", Summary: "PodGroup llm Running"}},
		},
		{name: "unknown kind", kind: "ConfigMap", obj: `{metadata: {name: x}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reactions(tc.kind, u(t, tc.old), u(t, tc.obj))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reactions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildTimeline(t *testing.T) {
	t0 := time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sc := &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Actors: []v1alpha1.Actor{{Name: "sdk"}, {Name: "kueue"}, {Name: "idle"}}}}
	steps := []results.Step{
		{Name: "create", Writes: []results.Write{{
			Actor: "admin", FieldManager: "simctl", Verb: "create", Target: "TrainJob ns/llm", Started: at(10), Duration: 12 * time.Millisecond,
			ResourceVersionAfter: "5", Status: 201, Expected: true,
			Warnings:  []string{`unknown field "spec.suspended"`},
			Mutations: []results.FieldChange{{Path: "spec.managedBy", Kind: "added", Stored: `"x"`}},
		}}},
		{Name: "race", Writes: []results.Write{
			{Actor: "kueue", FieldManager: "kueue-admission", Verb: "patch", PatchType: "merge", Target: "TrainJob ns/llm", Started: at(30), Duration: time.Millisecond,
				ResourceVersionBefore: "5", ResourceVersionAfter: "6", Status: 200, Expected: true},
			{Actor: "sdk", FieldManager: "kubeflow-sdk", Verb: "update", Target: "TrainJob ns/llm", Started: at(29), Duration: time.Millisecond,
				ResourceVersionBefore: "5", Status: 409, Reason: "Conflict", Message: "the object has been modified", Expected: false},
		}},
	}
	observed := []results.TimelineEntry{
		{At: at(20), Lane: "trainer", Kind: "jobset-created", Summary: "JobSet llm created", Step: "create"},
		{At: at(40), Lane: "taint-eviction-controller", Kind: "event", Summary: "e", Step: "race"},
		{At: at(35), Lane: "scheduler", Kind: "pod-bound", Summary: "b", Step: "race"},
	}
	setup := []results.Write{{
		Actor: "admin", FieldManager: "simctl", Verb: "create", Target: "TrainingRuntime ns/torch-gpu", Started: at(2), Duration: time.Millisecond,
		ResourceVersionAfter: "4", Status: 201, Expected: true,
	}}
	got := buildTimeline(sc, setup, steps, observed, 3, []string{"failed to list podgroups"})
	want := &results.Timeline{
		Lanes: []string{"sdk", "kueue", "idle", "admin", "trainer", "jobset", "job-controller", "scheduler", "kwok", "taint-eviction-controller"},
		Entries: []results.TimelineEntry{
			{At: at(2), Duration: time.Millisecond, Lane: "admin", Kind: "write", Object: "TrainingRuntime ns/torch-gpu", Summary: "create TrainingRuntime ns/torch-gpu: 201 Created",
				Detail: "field manager: simctl\nresourceVersion: (absent) → 4",
				Step:   "set-up", Status: 201, Write: &results.WriteRef{Index: 0, Setup: true}},
			{At: at(10), Duration: 12 * time.Millisecond, Lane: "admin", Kind: "write", Object: "TrainJob ns/llm", Summary: "create TrainJob ns/llm: 201 Created",
				Detail: "field manager: simctl\nresourceVersion: (absent) → 5\nwarning: unknown field \"spec.suspended\"\nthe server changed:\n  spec.managedBy: added \"x\"",
				Step:   "create", Status: 201, Write: &results.WriteRef{Step: 0, Index: 0}},
			observed[0],
			{At: at(29), Duration: time.Millisecond, Lane: "sdk", Kind: "write", Object: "TrainJob ns/llm", Summary: "update TrainJob ns/llm: 409 Conflict",
				Detail: "field manager: kubeflow-sdk\nresourceVersion: 5 → (absent)\nrefused, NOT expected\nmessage: the object has been modified",
				Step:   "race", Status: 409, Write: &results.WriteRef{Step: 1, Index: 1}},
			{At: at(30), Duration: time.Millisecond, Lane: "kueue", Kind: "write", Object: "TrainJob ns/llm", Summary: "patch (merge) TrainJob ns/llm: 200 OK",
				Detail: "field manager: kueue-admission\nresourceVersion: 5 → 6",
				Step:   "race", Status: 200, Write: &results.WriteRef{Step: 1, Index: 0}},
			observed[2],
			observed[1],
		},
		Truncated: true,
		Dropped:   3,
		Problems:  []string{"failed to list podgroups"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline mismatch (-want +got):\n%s", diff)
	}

	// Without any entry the timeline still has its lanes and an empty list.
	empty := buildTimeline(&v1alpha1.Scenario{}, nil, nil, nil, 0, nil)
	if diff := cmp.Diff(&results.Timeline{Lanes: controllerLanes, Entries: []results.TimelineEntry{}}, empty); diff != "" {
		t.Errorf("empty timeline mismatch (-want +got):\n%s", diff)
	}
}

func TestWatcherCapAndStop(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC))
	w := &watcher{clock: clk, step: setUpStep}
	pod := func(i int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("p%d", i)}}}
	}
	w.observe("Pod", nil, pod(0))
	w.setStep("second")
	clk.SetTime(clk.Now().Add(time.Second))
	for i := 1; i < MaxTimelineReactions+5; i++ {
		w.observe("Pod", nil, pod(i))
	}
	entries, dropped, problems := w.stop()
	w.observe("Pod", nil, pod(-1)) // after stop: not recorded
	if len(entries) != MaxTimelineReactions || dropped != 5 || problems != nil {
		t.Fatalf("got %d entries, %d dropped, problems %v; want %d, 5, none", len(entries), dropped, problems, MaxTimelineReactions)
	}
	first, last := entries[0], entries[len(entries)-1]
	want := []results.TimelineEntry{
		{At: time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC), Lane: "job-controller", Kind: "pod-created", Object: "Pod/p0", Summary: "Pod p0 created", Step: "set-up"},
		{At: time.Date(2026, time.March, 14, 9, 26, 54, 0, time.UTC), Lane: "job-controller", Kind: "pod-created", Object: "Pod/p1999", Summary: "Pod p1999 created", Step: "second"},
	}
	if diff := cmp.Diff(want, []results.TimelineEntry{first, last}); diff != "" {
		t.Errorf("first and last entries mismatch (-want +got):\n%s", diff)
	}
	if again, _, _ := w.stop(); len(again) != MaxTimelineReactions {
		t.Errorf("an entry was recorded after stop: %d entries", len(again))
	}
	var nilWatcher *watcher
	nilWatcher.setStep("x") // a scenario whose set-up failed early has no watcher
	if e, d, p := nilWatcher.stop(); e != nil || d != 0 || p != nil {
		t.Errorf("nil watcher stop() = %v, %d, %v; want nothing", e, d, p)
	}
}

// TestWatcherQuiet: quiet returns once the namespace has had no change for
// the time asked, and reports false when changes go on past its bound.
func TestWatcherQuiet(t *testing.T) {
	w := &watcher{clock: clock.RealClock{}, step: setUpStep}
	pod := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p"}}}
	if !w.quiet(t.Context(), time.Hour, time.Second) {
		t.Error("a namespace with no change was not quiet")
	}
	w.observe("Pod", nil, pod)
	start := time.Now()
	if !w.quiet(t.Context(), 100*time.Millisecond, 5*time.Second) {
		t.Error("a namespace with one change was never quiet")
	}
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Errorf("quiet returned %s after the change, want at least the 100ms asked", took)
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		phases := []string{"Pending", "Running"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				old, next := pod.DeepCopy(), pod.DeepCopy()
				_ = unstructured.SetNestedField(old.Object, phases[i%2], "status", "phase")
				_ = unstructured.SetNestedField(next.Object, phases[(i+1)%2], "status", "phase")
				w.observe("Pod", old, next)
			}
		}
	}()
	defer close(stop)
	if w.quiet(t.Context(), 200*time.Millisecond, 500*time.Millisecond) {
		t.Error("a namespace changing every 10ms was quiet for 200ms")
	}
}

// TestWatcherQuietOverRepeatedEvents: a new Event that repeats an earlier
// one's reporter, object and reason with another message (the scheduler
// retrying a Pod it cannot place, its message counting the cluster's
// nodes) is on the timeline but no change for quiet; one with a reason not
// seen before is.
func TestWatcherQuietOverRepeatedEvents(t *testing.T) {
	event := func(i int, reason string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata":           map[string]any{"name": fmt.Sprintf("p.%d", i)},
			"involvedObject":     map[string]any{"kind": "Pod", "name": "p", "uid": "u1"},
			"reportingComponent": "default-scheduler",
			"type":               "Warning",
			"reason":             reason,
			"message":            fmt.Sprintf("0/%d nodes are available: %d node(s) had untolerated taint(s).", i, i),
		}}
	}
	for _, tc := range []struct {
		second string
		quiet  bool
	}{
		{second: "FailedScheduling", quiet: true},
		{second: "Scheduled", quiet: false},
	} {
		clk := clocktesting.NewFakePassiveClock(time.Now())
		w := &watcher{clock: clk, step: setUpStep}
		w.observe("Event", nil, event(1, "FailedScheduling"))
		clk.SetTime(clk.Now().Add(time.Second))
		w.observe("Event", nil, event(2, tc.second))
		if got := w.quiet(t.Context(), 500*time.Millisecond, 10*time.Millisecond); got != tc.quiet {
			t.Errorf("a %s event a second after a FailedScheduling one: quiet for the last 500ms %v, want %v", tc.second, got, tc.quiet)
		}
		if entries, _, _ := w.stop(); len(entries) != 2 {
			t.Errorf("both events are on the timeline: %d entries", len(entries))
		}
	}
}

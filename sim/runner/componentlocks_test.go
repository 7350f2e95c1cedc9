package runner

import (
	"slices"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

func planOf(spec v1alpha1.ScenarioSpec) Plan {
	return Plan{File: &scenario.File{Scenario: &v1alpha1.Scenario{Spec: spec}}}
}

// TestComponentNeeds: every run reads JobSet and the Trainer, and Kueue
// when it runs it; a gate on one of them (by component or by its user), or
// a webhook's hold in a scenario that runs Kueue, or a component step on
// it, writes it; an actor's gate and a view take none. A component step on
// kube-controller-manager or kube-scheduler writes the Trainer, which
// every run reads, and an upgrade JobSet too.
func TestComponentNeeds(t *testing.T) {
	kueueUser := "system:serviceaccount:kueue-system:kueue-controller-manager"
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.ScenarioSpec
		read, write []string
		apart       bool // RunsApart: it keeps every other run off the cluster
	}{
		{"plain", v1alpha1.ScenarioSpec{}, []string{"jobset", "trainer"}, nil, false},
		{"with kueue", v1alpha1.ScenarioSpec{Components: []string{"kueue"}}, []string{"jobset", "kueue", "trainer"}, nil, false},
		{"an actor's gate", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Actor: "sdk"}}}, []string{"jobset", "trainer"}, nil, false},
		{"a gate on kueue", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{Component: "kueue"}}}, []string{"jobset", "trainer"}, []string{"kueue"}, false},
		{"a gate on kueue's user", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{User: kueueUser}}}, []string{"jobset", "trainer"}, []string{"kueue"}, false},
		{"a hold", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Webhooks: []v1alpha1.AdmissionWebhook{{Hold: &v1alpha1.WebhookHold{}}}}, []string{"jobset", "trainer"}, []string{"kueue"}, false},
		{"gates on jobset and the trainer", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Component: "jobset"}, {Component: "trainer"}}}, nil, []string{"jobset", "trainer"}, true},
		{"a view of the trainer", v1alpha1.ScenarioSpec{Views: []v1alpha1.View{{Component: "trainer"}}}, []string{"jobset", "trainer"}, nil, false},
		{"a partition of kueue", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Views: []v1alpha1.View{{Component: "kueue", Partition: "refuse"}}}, []string{"jobset", "trainer"}, []string{"kueue"}, false},
		{"a partition of kwok", v1alpha1.ScenarioSpec{Views: []v1alpha1.View{{Component: "kwok", Partition: "unanswered"}}}, []string{"jobset"}, []string{"trainer"}, true},
		{"a component step", v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Component: &v1alpha1.ComponentAction{Name: "jobset", Action: "crash"}}}}, []string{"trainer"}, []string{"jobset"}, true},
		{"a crash of kube-controller-manager", v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Component: &v1alpha1.ComponentAction{Name: "kube-controller-manager", Action: "crash"}}}}, []string{"jobset"}, []string{"trainer"}, true},
		{"an upgrade", v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Component: &v1alpha1.ComponentAction{Name: "trainer", Action: "upgrade", To: "v2.3.0"}}}}, nil, []string{"jobset", "trainer"}, true},
		{"a gate on the job controller", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Component: "kube-controller-manager/job-controller"}}}, []string{"jobset", "trainer"}, nil, false},
	} {
		read, write := componentNeeds(planOf(tc.spec))
		if !slices.Equal(read, tc.read) || !slices.Equal(write, tc.write) {
			t.Errorf("%s: read %v, write %v; want %v, %v", tc.name, read, write, tc.read, tc.write)
		}
		if got := RunsApart(planOf(tc.spec)); got != tc.apart {
			t.Errorf("%s: RunsApart %v, want %v", tc.name, got, tc.apart)
		}
	}
}

// TestComponentLocks: a run that gates Kueue waits for the runs that use
// it and keeps new ones off until it ends; runs that only use it overlap.
func TestComponentLocks(t *testing.T) {
	l := &Locks{}
	uses := planOf(v1alpha1.ScenarioSpec{Components: []string{"kueue"}})
	gates := planOf(v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{Component: "kueue"}}})

	first, second := l.Lock(uses), l.Lock(uses) // readers overlap
	acquired := make(chan struct{})
	go func() {
		unlock := l.Lock(gates)
		close(acquired)
		time.Sleep(50 * time.Millisecond)
		unlock()
	}()
	select {
	case <-acquired:
		t.Fatal("the gating run started beside runs that use Kueue")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	second()
	<-acquired
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		l.Lock(uses)()
	}()
	wg.Wait()
	if time.Since(start) < 10*time.Millisecond {
		t.Error("a run that uses Kueue started while the gating run held it")
	}
}

// TestRunLocksNames: two runs of a scenario that names a
// WorkloadPriorityClass never overlap; runs that name none do.
func TestRunLocksNames(t *testing.T) {
	l := &Locks{}
	named := planOf(v1alpha1.ScenarioSpec{Queues: &v1alpha1.Queues{PriorityClasses: []v1alpha1.PriorityClass{{Name: "low"}}}})
	plain := planOf(v1alpha1.ScenarioSpec{})
	unlockPlain := l.Lock(plain)
	l.Lock(plain)() // readers of JobSet overlap
	unlockPlain()
	first := l.Lock(named)
	second := make(chan struct{})
	go func() {
		l.Lock(named)()
		close(second)
	}()
	select {
	case <-second:
		t.Fatal("two runs held WorkloadPriorityClass/low at once")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the second run never got WorkloadPriorityClass/low")
	}
}

// TestWritersDone: each exclusive component counts the plans whose gates
// hold it, for the runs that only use it to wait for.
func TestWritersDone(t *testing.T) {
	plan := func(gates ...string) Plan {
		s := &v1alpha1.Scenario{}
		for _, c := range gates {
			s.Spec.Gates = append(s.Spec.Gates, v1alpha1.Gate{Component: c})
		}
		return Plan{File: &scenario.File{Scenario: s}}
	}
	done := writersDone([]Plan{plan("jobset"), plan("jobset", "kueue"), plan(), plan("trainer")})
	for c, n := range map[string]int{"jobset": 2, "kueue": 1, "trainer": 1} {
		wg := done[c]
		for range n {
			wg.Done() // panics if fewer than n were counted
		}
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(time.Second):
			t.Errorf("%s: more than %d plans counted", c, n)
		}
	}
}

// TestExclusive: a plan whose gates hold a component, or that creates
// WorkloadPriorityClasses another run of its scenario creates, must run
// alone among processes that share the cluster; an actor's gate or a
// plain scenario need not.
func TestExclusive(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.ScenarioSpec
		want bool
	}{
		{"plain", v1alpha1.ScenarioSpec{}, false},
		{"an actor's gate", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Actor: "sdk"}}}, false},
		{"queues without priority classes", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Queues: &v1alpha1.Queues{}}, false},
		{"a gate on jobset", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Component: "jobset"}}}, true},
		{"a gate on the trainer", v1alpha1.ScenarioSpec{Gates: []v1alpha1.Gate{{Component: "trainer"}}}, true},
		{"a priority class", v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Queues: &v1alpha1.Queues{PriorityClasses: []v1alpha1.PriorityClass{{Name: "high", Value: 100}}}}, true},
	} {
		if got := Exclusive(planOf(tc.spec)); got != tc.want {
			t.Errorf("%s: Exclusive %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAdmissionWaitingRunHoldsNoPlace: of two runs that gate Kueue, the
// second waits for the first without a --parallel place, and a run that
// does not use Kueue takes the free place meanwhile.
func TestAdmissionWaitingRunHoldsNoPlace(t *testing.T) {
	gates := planOf(v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{Component: "kueue"}}})
	plain := planOf(v1alpha1.ScenarioSpec{})
	adm := newAdmission([]Plan{gates, gates, plain}, 2)
	ctx := t.Context()
	leaveFirst, ok := adm.enter(ctx, gates, 0)
	if !ok {
		t.Fatal("the first gating run did not start")
	}
	second := make(chan func())
	go func() {
		leave, _ := adm.enter(ctx, gates, 1)
		second <- leave
	}()
	// Time for the second run to reach its wait: were it to wait for
	// Kueue in a place, it would have taken the free place by then. (The
	// correct order passes whatever the goroutines' timing.)
	time.Sleep(50 * time.Millisecond)
	third := make(chan func())
	go func() {
		leave, _ := adm.enter(ctx, plain, 2)
		third <- leave
	}()
	select {
	case leave := <-third:
		leave()
	case leave := <-second:
		leave()
		t.Fatal("the second gating run started while the first held Kueue")
	case <-time.After(5 * time.Second):
		t.Fatal("the run that does not use Kueue got no place while a gating run waited for Kueue")
	}
	leaveFirst()
	select {
	case leave := <-second:
		leave()
	case <-time.After(5 * time.Second):
		t.Fatal("the second gating run never started")
	}
}

// TestAdmissionGatesOfEveryRunsComponentsFirst: a run that gates only
// Kueue waits until the run that gates JobSet, which every run uses, is
// done, and then starts beside a run that does not use Kueue; the run
// that gates JobSet waits for nobody's gates, though the run that gates
// Kueue asked first.
func TestAdmissionGatesOfEveryRunsComponentsFirst(t *testing.T) {
	gatesKueue := planOf(v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{Component: "kueue"}}})
	gatesJobSet := planOf(v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Gates: []v1alpha1.Gate{{Component: "jobset"}}})
	plain := planOf(v1alpha1.ScenarioSpec{})
	adm := newAdmission([]Plan{gatesKueue, gatesJobSet, plain}, 3)
	ctx := t.Context()
	entered := func(p Plan, rank int) chan func() {
		ch := make(chan func(), 1)
		go func() {
			leave, _ := adm.enter(ctx, p, rank)
			ch <- leave
		}()
		return ch
	}
	kueue := entered(gatesKueue, 0)
	// Time for the Kueue run to reach its wait: were it to take Kueue
	// first, the JobSet run (which uses Kueue) would wait for it below.
	time.Sleep(50 * time.Millisecond)
	var leaveJobSet func()
	select {
	case leaveJobSet = <-entered(gatesJobSet, 1):
	case <-kueue:
		t.Fatal("the run that gates Kueue started before the run that gates JobSet")
	case <-time.After(5 * time.Second):
		t.Fatal("the run that gates JobSet waited behind the run that gates Kueue")
	}
	select {
	case <-kueue:
		t.Fatal("the run that gates Kueue started while the run that gates JobSet held it")
	case <-time.After(50 * time.Millisecond):
	}
	leaveJobSet()
	for name, ch := range map[string]chan func(){"gating Kueue": kueue, "not using Kueue": entered(plain, 2)} {
		select {
		case leave := <-ch:
			defer leave()
		case <-time.After(5 * time.Second):
			t.Fatalf("the run %s did not start once the run that gates JobSet was done", name)
		}
	}
}

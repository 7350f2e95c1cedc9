package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/explain"
)

// Named timeouts of the explain agreement.
const (
	// buildWait bounds how long the last step of a scenario waits for the
	// trainer to have built a JobSet for every TrainJob of the namespace.
	buildWait = 30 * time.Second
	// buildPoll is how often it looks.
	buildPoll = 200 * time.Millisecond
)

// agreement checks that simctl explain computes, for every TrainJob the
// in-process trainer built a JobSet for, the very JobSet the trainer built.
// The trainer's builds are recorded through cluster.TrainerBuildObserver;
// each is explained after the step during which it was recorded (before
// anything of the scenario is deleted) with an explain.Engine on the
// cluster's API server, and the two JobSet apply configurations are compared
// as JSON.
type agreement struct {
	env    cluster.Cluster
	engine *explain.Engine

	mu sync.Mutex
	// pending are the builds not yet checked, by namespace.
	pending map[string][]build
	// built holds, by namespace, the TrainJobs a JobSet was built for.
	built map[string]map[string]bool
	// done are the namespaces whose scenario has ended: their later builds
	// are not recorded.
	done map[string]bool
}

// build is one JobSet the trainer built.
type build struct {
	trainJob *trainer.TrainJob
	jobSet   []byte
}

func newAgreement(env cluster.Cluster) *agreement {
	return &agreement{env: env, pending: map[string][]build{}, built: map[string]map[string]bool{}, done: map[string]bool{}}
}

// record is the environment's OnTrainerBuild: it keeps the TrainJob and the
// JSON of the JobSet, if the trainer built one, and nothing else; it does
// not change what the trainer does.
func (a *agreement) record(tj *trainer.TrainJob, objs []apiruntime.ApplyConfiguration) {
	js := explain.JobSet(objs)
	if js == nil || tj == nil {
		return
	}
	data, err := json.Marshal(js)
	b := build{trainJob: tj, jobSet: data}
	if err != nil {
		b.jobSet = []byte(fmt.Sprintf("%q", "failed to encode the trainer's JobSet: "+err.Error()))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done[tj.Namespace] {
		return
	}
	a.pending[tj.Namespace] = append(a.pending[tj.Namespace], b)
	if a.built[tj.Namespace] == nil {
		a.built[tj.Namespace] = map[string]bool{}
	}
	a.built[tj.Namespace][tj.Name] = true
}

// start builds the explain engine once the environment runs.
func (a *agreement) start(ctx context.Context) error {
	c, err := client.NewWithWatch(a.env.Config(), client.Options{Scheme: a.env.Scheme()})
	if err != nil {
		return fmt.Errorf("failed to create the explain client: %w", err)
	}
	a.engine, err = explain.New(ctx, c)
	return err
}

// verdict is what the agreement found for one scenario.
type verdict struct {
	// checked counts the builds explain was compared with.
	checked int
	// trainJobs are the TrainJobs of the namespace at the last step.
	trainJobs []string
	// problems are mismatches and failures, one message each.
	problems []string
}

// check compares every pending build of ns with explain. At the scenario's
// last step it first waits until the trainer has built a JobSet for every
// TrainJob of ns, so that each of them is checked at least once.
func (a *agreement) check(ctx context.Context, ns string, last bool, v *verdict) {
	if last {
		v.trainJobs = a.waitForBuilds(ctx, ns, v)
	}
	a.mu.Lock()
	builds := a.pending[ns]
	delete(a.pending, ns)
	if last {
		a.done[ns] = true
		delete(a.built, ns)
	}
	a.mu.Unlock()
	for _, b := range builds {
		v.checked++
		if msg := a.compare(ctx, b); msg != "" {
			v.problems = append(v.problems, msg)
		}
	}
}

// waitForBuilds returns the TrainJobs of ns once a JobSet was built for
// each, or when buildWait has passed, with a problem for each one without.
func (a *agreement) waitForBuilds(ctx context.Context, ns string, v *verdict) []string {
	deadline := time.Now().Add(buildWait)
	for {
		var list trainer.TrainJobList
		if err := a.env.Client().List(ctx, &list, client.InNamespace(ns)); err != nil {
			v.problems = append(v.problems, fmt.Sprintf("failed to list the TrainJobs of %s: %v", ns, err))
			return nil
		}
		var names, missing []string
		a.mu.Lock()
		for _, tj := range list.Items {
			names = append(names, tj.Name)
			if !a.built[ns][tj.Name] {
				missing = append(missing, tj.Name)
			}
		}
		a.mu.Unlock()
		if len(missing) == 0 {
			return names
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			slices.Sort(missing)
			v.problems = append(v.problems, fmt.Sprintf("the trainer built no JobSet for TrainJob(s) %v within %s: explain could not be checked against it", missing, buildWait))
			return names
		}
		select {
		case <-ctx.Done():
		case <-time.After(buildPoll):
		}
	}
}

// compare explains a build's TrainJob and compares the final JobSet with
// the trainer's; it returns "" when they are equal.
func (a *agreement) compare(ctx context.Context, b build) string {
	res, err := a.engine.Explain(ctx, b.trainJob)
	if err != nil {
		return fmt.Sprintf("explain of TrainJob %s (resourceVersion %s) failed: %v", b.trainJob.Name, b.trainJob.ResourceVersion, err)
	}
	got, err := json.Marshal(res.JobSet)
	if err != nil {
		return fmt.Sprintf("failed to encode explain's JobSet of TrainJob %s: %v", b.trainJob.Name, err)
	}
	var want, have any
	if err := json.Unmarshal(b.jobSet, &want); err != nil {
		return fmt.Sprintf("failed to decode the trainer's JobSet of TrainJob %s: %v", b.trainJob.Name, err)
	}
	if err := json.Unmarshal(got, &have); err != nil {
		return fmt.Sprintf("failed to decode explain's JobSet of TrainJob %s: %v", b.trainJob.Name, err)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		return fmt.Sprintf("explain's final JobSet of TrainJob %s (resourceVersion %s) differs from the trainer's (-trainer +explain):\n%s",
			b.trainJob.Name, b.trainJob.ResourceVersion, diff)
	}
	return ""
}

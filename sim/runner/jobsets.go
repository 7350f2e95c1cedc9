package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/util/trainjob"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/explain"
	"github.com/trainersim/trainersim/sim/releases"
)

// jobSetCatchUp bounds checkJobSet's wait for a JobSet found behind to
// catch up, jobSetPoll its checks meanwhile.
const (
	jobSetCatchUp = 10 * time.Second
	jobSetPoll    = 250 * time.Millisecond
)

// The parts of a JobSet the trainer's apply sets and checkJobSet compares:
// its spec and the metadata the trainer builds.
var jobSetCompared = [][]string{
	{"spec"},
	{"metadata", "labels"},
	{"metadata", "annotations"},
	{"metadata", "ownerReferences"},
}

// explainEngine returns the explain engine of c, made once per cluster:
// the trainer's own runtimes, reading c (sim/explain).
func (r *Runner) explainEngine(ctx context.Context, c cluster.Cluster) (*explain.Engine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.engines[c]; ok {
		return e, nil
	}
	e, err := explain.NewForConfig(ctx, c.Config())
	if err != nil {
		return nil, err
	}
	if r.engines == nil {
		r.engines = map[cluster.Cluster]*explain.Engine{}
	}
	r.engines[c] = e
	return e, nil
}

// checkJobSet sets st.JobSetBehind (or st.JobSetUnchecked) for the TrainJob
// tj when the trainer would apply its JobSet now (Runner.CheckJobSets): the
// TrainJob is its own (not managed by another controller), not finished, not
// being deleted, its JobSet exists, and the TrainJob or the JobSet is
// suspended (the trainer leaves a running JobSet as it is: the JobSet
// plugin's Build, pkg/runtime/framework/plugins/jobset). The JobSet the
// trainer builds from tj is explain's (Engine.Build, the trainer's
// NewObjects), applied as the trainer applies it (field manager "trainer",
// forced) as a server-side dry run: the fields of the JobSet that apply
// would change are the ones it is behind in. The dry run goes through the
// API server's defaulting and admission as the trainer's apply would, as
// the admin (the cluster's webhooks do not tell the trainer's identity
// from another). Checked only when the cluster runs the Trainer compiled
// into simctl, whose runtimes explain runs.
//
// The Trainer reconciles TrainJobs with one worker: beside other runs its
// queue can be further behind than the namespace's quiet spell, so a
// JobSet found behind is checked again every jobSetPoll until it holds,
// for jobSetCatchUp: what the Trainer brings up to date by then holds.
// Each check has its own ownersTimeout, so the end of the catch-up never
// cuts a check short: the last check made stands, with its answer.
func (s *scenarioRun) checkJobSet(ctx context.Context, u *unstructured.Unstructured, st *results.TrainJobState) {
	st.JobSetBehind, st.JobSetUnchecked = s.jobSetCheck(ctx, u)
	catchUp := time.NewTimer(jobSetCatchUp)
	defer catchUp.Stop()
	tick := time.NewTicker(jobSetPoll)
	defer tick.Stop()
	for len(st.JobSetBehind) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-catchUp.C:
			return
		case <-tick.C:
		}
		fresh, err := s.readTrainJob(ctx, u)
		if apierrors.IsNotFound(err) {
			return // deleted meanwhile: what was found stands
		}
		if err != nil {
			st.JobSetUnchecked = fmt.Sprintf("reading TrainJob again: %v", err)
			return
		}
		st.JobSetBehind, st.JobSetUnchecked = s.jobSetCheck(ctx, fresh)
	}
}

// readTrainJob reads the TrainJob u again, within ownersTimeout.
func (s *scenarioRun) readTrainJob(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, ownersTimeout)
	defer cancel()
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(u.GroupVersionKind())
	return fresh, s.cluster.Client().Get(ctx, client.ObjectKeyFromObject(u), fresh)
}

// jobSetCheck is jobSetBehind within ownersTimeout.
func (s *scenarioRun) jobSetCheck(ctx context.Context, u *unstructured.Unstructured) ([]string, string) {
	ctx, cancel := context.WithTimeout(ctx, ownersTimeout)
	defer cancel()
	return s.jobSetBehind(ctx, u)
}

// jobSetBehind is checkJobSet's one check of the TrainJob u: the fields
// its JobSet is behind in, or why it could not be checked; neither when
// the Trainer would not apply the JobSet now.
func (s *scenarioRun) jobSetBehind(ctx context.Context, u *unstructured.Unstructured) (behind []string, unchecked string) {
	v := s.cluster.Versions()
	if v.Trainer != releases.TrainerVersion || v.TrainerCheckout != "" {
		return nil, ""
	}
	tj := &trainer.TrainJob{}
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, tj); err != nil {
		return nil, fmt.Sprintf("reading TrainJob: %v", err)
	}
	if trainjob.IsManagedByExternalController(tj) || trainjob.IsTrainJobFinished(tj) || tj.DeletionTimestamp != nil {
		return nil, ""
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"))
	if err := s.cluster.Client().Get(ctx, client.ObjectKeyFromObject(tj), live); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("reading its JobSet: %v", err)
		}
		return nil, ""
	}
	jsSuspended, _, _ := unstructured.NestedBool(live.Object, "spec", "suspend")
	if !ptr.Deref(tj.Spec.Suspend, false) && !jsSuspended {
		return nil, ""
	}
	engine, err := s.runner.explainEngine(ctx, s.cluster)
	if err != nil {
		return nil, fmt.Sprintf("starting explain: %v", err)
	}
	js, err := engine.Build(ctx, tj)
	if err != nil {
		return nil, err.Error()
	}
	data, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Sprintf("encoding the JobSet: %v", err)
	}
	applied := &unstructured.Unstructured{}
	if err := applied.UnmarshalJSON(data); err != nil {
		return nil, fmt.Sprintf("encoding the JobSet: %v", err)
	}
	// The apply the trainer would send, in a dry run: nothing is stored.
	// A refusal (a webhook, a CEL rule) is the trainer's too: the JobSet
	// stays as it is, which the scenario's expectations speak of.
	if err := s.cluster.Client().Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(explain.FieldOwner), client.ForceOwnership, client.DryRunAll); err != nil {
		return nil, fmt.Sprintf("the trainer's apply, as a dry run: %v", err)
	}
	for _, d := range fieldDiffs(compared(live), compared(applied)) {
		behind = append(behind, d.Path)
	}
	return behind, ""
}

// compared is the part of a JobSet in jobSetCompared.
func compared(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for _, p := range jobSetCompared {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, p...); ok {
			_ = unstructured.SetNestedField(out, apiruntime.DeepCopyJSONValue(v), p...)
		}
	}
	return out
}

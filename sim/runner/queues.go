package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// A scenario's Kueue queueing objects (spec.queues), built from its node
// profiles: one ResourceFlavor per flavor, a ClusterQueue named after the
// namespace that admits it alone, a LocalQueue in it.

// gpuProductLabel is the label GPU feature discovery puts on GPU nodes, which
// a flavor selects by when the profile has it.
const gpuProductLabel = "nvidia.com/gpu.product"

// queuesReadyTimeout bounds the wait for the ClusterQueue and LocalQueue to
// become Active.
const queuesReadyTimeout = 30 * time.Second

// usesKueue reports whether the scenario asks for the kueue component.
func usesKueue(sc *v1alpha1.Scenario) bool {
	return slices.Contains(sc.Spec.Components, sim.ComponentKueue)
}

// clusterLabels are the labels of the scenario's cluster-scoped objects
// (queueing objects, webhook configurations): trainersim's, and the run's
// on a cluster simctl did not start, for simctl clean to find what a killed
// run left.
func (s *scenarioRun) clusterLabels() map[string]string {
	labels := map[string]string{sim.ManagedByLabel: sim.ManagedByValue}
	if s.runLabel != "" {
		labels[sim.RunLabel] = s.runLabel
	}
	return labels
}

// queueObjects returns the ResourceFlavors, the ClusterQueue and the
// LocalQueue of the scenario's spec.queues (none without it), in the order
// they are created.
func (s *scenarioRun) queueObjects() ([]*unstructured.Unstructured, error) {
	q := s.sc.Spec.Queues
	if q == nil {
		return nil, nil
	}
	kueueObject := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2",
			"kind":       kind,
			"metadata":   map[string]any{"name": name},
			"spec":       spec,
		}}
		u.SetLabels(s.clusterLabels())
		return u
	}
	var objs, flavors []any
	for _, pc := range q.PriorityClasses {
		wpc := kueueObject("WorkloadPriorityClass", pc.Name, nil)
		delete(wpc.Object, "spec")
		wpc.Object["value"] = int64(pc.Value)
		objs = append(objs, wpc)
	}
	for _, f := range q.Flavors {
		profile, err := fakegpu.LookupProfile(f.Profile)
		if err != nil {
			return nil, err
		}
		key := f.NodeLabel
		if key == "" {
			key = fakegpu.ProfileLabel
			if _, ok := profile.Labels[gpuProductLabel]; ok {
				key = gpuProductLabel
			}
		}
		value := profile.Labels[key]
		if key == fakegpu.ProfileLabel {
			value = f.Profile
		}
		var tolerations []any
		for _, t := range profile.Taints {
			tol := map[string]any{"key": t.Key, "operator": "Exists", "effect": string(t.Effect)}
			if t.Value != "" {
				tol = map[string]any{"key": t.Key, "operator": "Equal", "value": t.Value, "effect": string(t.Effect)}
			}
			tolerations = append(tolerations, tol)
		}
		name := f.Name
		if name == "" {
			name = f.Profile
		}
		flavor := s.ns + "-" + name
		spec := map[string]any{"nodeLabels": map[string]any{key: value}}
		if len(tolerations) > 0 {
			spec["tolerations"] = tolerations
		}
		objs = append(objs, kueueObject("ResourceFlavor", flavor, spec))
		flavors = append(flavors, map[string]any{"name": flavor, "resources": []any{
			map[string]any{"name": "cpu", "nominalQuota": quota(f.CPU)},
			map[string]any{"name": "memory", "nominalQuota": quota(f.Memory)},
			map[string]any{"name": "nvidia.com/gpu", "nominalQuota": quota(f.GPU)},
		}})
	}
	preemption := q.Preemption
	if preemption == "" {
		preemption = "Never"
	}
	objs = append(objs, kueueObject("ClusterQueue", s.ns, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": s.ns}},
		"preemption":        map[string]any{"withinClusterQueue": preemption},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
			"flavors":          flavors,
		}},
	}))
	lq := kueueObject("LocalQueue", q.LocalQueue, map[string]any{"clusterQueue": s.ns})
	lq.SetNamespace(s.ns)
	objs = append(objs, lq)
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.(*unstructured.Unstructured)
	}
	return out, nil
}

func quota(q string) string {
	if q == "" {
		return "0"
	}
	return q
}

// createQueues creates the queueing objects and waits until the
// ClusterQueue and the LocalQueue are Active, and Kueue's TrainJob webhook
// of the namespace's own when it asks for one.
func (s *scenarioRun) createQueues(ctx context.Context) error {
	objs, err := s.queueObjects()
	if err != nil || len(objs) == 0 {
		return err
	}
	c := s.cluster.Client()
	if err := s.installKueueWebhook(ctx); err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("failed to create Kueue %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs[len(objs)-2:] {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, queuesReadyTimeout, true, func(ctx context.Context) (bool, error) {
			got := o.DeepCopy()
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				return false, err
			}
			conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conditions {
				m, _ := cond.(map[string]any)
				if m["type"] == "Active" {
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
					return m["status"] == "True", nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("Kueue %s %s is not Active within %s (%s): %w", o.GetKind(), o.GetName(), queuesReadyTimeout, last, err)
		}
	}
	return nil
}

// kueueEntryTwice is in the refusal of a TrainJob to which Kueue's webhook
// added its entry twice.
const kueueEntryTwice = `Duplicate value: {"manager":"kueue.x-k8s.io/manager"}`

// installKueueWebhook creates the namespace's own copy of Kueue's TrainJob
// defaulting webhook (spec.queues.kueueWebhookReinvocation) and waits until
// it defaults a server-side dry run of a TrainJob in the queue.
func (s *scenarioRun) installKueueWebhook(ctx context.Context) error {
	q := s.sc.Spec.Queues
	if q.KueueWebhookReinvocation == "" {
		return nil
	}
	kw, ok := s.cluster.(sim.KueueWebhooks)
	if !ok {
		return fmt.Errorf("this cluster cannot give Kueue's webhook a reinvocationPolicy")
	}
	cfg, err := kw.KueueTrainJobWebhook(s.ns, s.nsSuffix(), q.KueueWebhookReinvocation)
	if err != nil {
		return err
	}
	c := s.cluster.Client()
	if err := c.Create(ctx, cfg); err != nil {
		return fmt.Errorf("failed to create %s: %w", cfg.Name, err)
	}
	s.kueueWebhook = cfg.Name
	probe := sim.ProbeTrainJob(s.ns, "trainersim-kueue-probe", "ClusterTrainingRuntime", "torch-distributed")
	probe.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": q.LocalQueue})
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, queuesReadyTimeout, true, func(ctx context.Context) (bool, error) {
		got := probe.DeepCopy()
		if err := c.Create(ctx, got, client.DryRunAll); err != nil {
			// Reinvoked, Kueue v0.19.1's defaulting adds its entry twice
			// (Kueue #15210): the refusal shows it was called.
			if strings.Contains(err.Error(), kueueEntryTwice) {
				return true, nil
			}
			if !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				last = err
			}
			return false, nil
		}
		entries, _, _ := unstructured.NestedSlice(got.Object, "spec", "runtimePatches")
		if len(entries) == 0 {
			last = fmt.Errorf("the dry run came back without Kueue's entry: %v", got.Object["spec"])
		}
		return len(entries) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("Kueue's webhook %s did not default a dry-run TrainJob within %s (last: %v): %w", cfg.Name, queuesReadyTimeout, last, err)
	}
	return nil
}

// deleteQueues deletes the cluster-scoped queueing objects (the LocalQueue
// goes with the namespace). Kueue removes their finalizers once nothing
// uses them; this does not wait for it.
func (s *scenarioRun) deleteQueues(ctx context.Context) error {
	objs, err := s.queueObjects()
	if err != nil {
		return err
	}
	c := s.cluster.Client()
	var errs []error
	if s.kueueWebhook != "" {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		cfg.Name = s.kueueWebhook
		errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, cfg)))
	}
	for i := len(objs) - 1; i >= 0; i-- {
		if objs[i].GetNamespace() == "" {
			errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, objs[i])))
		}
	}
	return errors.Join(errs...)
}

// WithComponents returns have and the components the scenarios of files
// ask for (spec.components), leaving out the scenarios whose Trainer range
// does not hold for the release a cluster will run (trainer; empty: the
// pinned one), which will be skipped: what a run on a cluster it starts
// must start.
func WithComponents(have []string, files []*scenario.File, trainer string) []string {
	if trainer == "" {
		trainer = sim.TrainerVersion
	}
	out := slices.Clone(have)
	for _, f := range files {
		if !TrainerHolds(f.Scenario.Spec.Trainer, trainer) {
			continue
		}
		for _, c := range f.Scenario.Spec.Components {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

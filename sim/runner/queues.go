package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/scenario"
)

// A scenario's Kueue queueing objects (spec.queues), built from its node
// profiles: one ResourceFlavor per flavor, a ClusterQueue named after the
// namespace that admits it alone, a LocalQueue in it.

// queuesReadyTimeout bounds the wait for the ClusterQueue and LocalQueue to
// become Active.
const queuesReadyTimeout = 30 * time.Second

// usesKueue reports whether the scenario asks for the kueue component.
func usesKueue(sc *v1alpha1.Scenario) bool {
	return slices.Contains(sc.Spec.Components, releases.ComponentKueue)
}

// clusterLabels are the labels of the scenario's cluster-scoped objects
// (queueing objects, webhook configurations): trainersim's, and the run's
// on a cluster simctl did not start, for simctl clean to find what a killed
// run left.
func (s *scenarioRun) clusterLabels() map[string]string {
	labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}
	if s.runLabel != "" {
		labels[cluster.RunLabel] = s.runLabel
	}
	return labels
}

// kueueAPIVersion is the API version of the queueing objects.
const kueueAPIVersion = "kueue.x-k8s.io/v1beta2"

// queueing are the Kueue objects of a scenario's spec.queues.
type queueing struct {
	// priorityClasses are the WorkloadPriorityClasses, flavors the
	// ResourceFlavors, clusterQueues the ClusterQueues, each admitting the
	// scenario's namespace alone (spec.queues' first, then its teams'):
	// all cluster-scoped.
	priorityClasses, flavors, clusterQueues []*unstructured.Unstructured
	// localQueues are the LocalQueues in the scenario's namespace, one for
	// each ClusterQueue.
	localQueues []*unstructured.Unstructured
}

// created lists the objects in the order they are created: what the
// ClusterQueues name before them, the LocalQueues after them.
func (q *queueing) created() []*unstructured.Unstructured {
	return slices.Concat(q.priorityClasses, q.flavors, q.clusterQueues, q.localQueues)
}

// clusterScoped lists the cluster-scoped objects in the order they are
// deleted, the reverse of their creation (the LocalQueues go with the
// namespace).
func (q *queueing) clusterScoped() []*unstructured.Unstructured {
	out := slices.Concat(q.priorityClasses, q.flavors, q.clusterQueues)
	slices.Reverse(out)
	return out
}

// queues returns the queueing objects of the scenario's spec.queues, nil
// without it.
func (s *scenarioRun) queues() (*queueing, error) {
	return queueObjects(s.sc.Spec.Queues, s.ns, s.clusterLabels(), fakegpu.LookupProfile)
}

// queueObjects builds the queueing objects of q (nil: none) for namespace
// ns, each labelled labels; profile looks up the flavors' node profiles.
// The ClusterQueue of spec.queues is named ns, a team's ns-<localQueue>.
func queueObjects(q *v1alpha1.Queues, ns string, labels map[string]string, profile func(name string) (fakegpu.Profile, error)) (*queueing, error) {
	if q == nil {
		return nil, nil
	}
	kueueObject := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(kueueAPIVersion)
		u.SetKind(kind)
		u.SetName(name)
		u.SetLabels(labels)
		return u
	}
	out := &queueing{}
	for _, pc := range q.PriorityClasses {
		wpc := kueueObject("WorkloadPriorityClass", pc.Name)
		wpc.Object["value"] = int64(pc.Value)
		out.priorityClasses = append(out.priorityClasses, wpc)
	}
	preemption := q.Preemption
	if preemption == "" {
		preemption = "Never"
	}
	made := map[string]bool{} // ResourceFlavors, by name
	queue := func(clusterQueue, localQueue string, flavors []v1alpha1.QueueFlavor) error {
		var quotas []any
		for _, f := range flavors {
			p, err := profile(f.Profile)
			if err != nil {
				return err
			}
			name := f.Name
			if name == "" {
				name = f.Profile
			}
			flavor := kueueObject("ResourceFlavor", ns+"-"+name)
			if !made[name] {
				made[name] = true
				flavor.Object["spec"] = flavorSpec(f, p)
				out.flavors = append(out.flavors, flavor)
			}
			quotas = append(quotas, map[string]any{"name": flavor.GetName(), "resources": []any{
				map[string]any{"name": "cpu", "nominalQuota": quota(f.CPU)},
				map[string]any{"name": "memory", "nominalQuota": quota(f.Memory)},
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": quota(f.GPU)},
			}})
		}
		cq := kueueObject("ClusterQueue", clusterQueue)
		cq.Object["spec"] = map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"preemption":        map[string]any{"withinClusterQueue": preemption},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
				"flavors":          quotas,
			}},
		}
		lq := kueueObject("LocalQueue", localQueue)
		lq.SetNamespace(ns)
		lq.Object["spec"] = map[string]any{"clusterQueue": clusterQueue}
		out.clusterQueues = append(out.clusterQueues, cq)
		out.localQueues = append(out.localQueues, lq)
		return nil
	}
	if err := queue(ns, q.LocalQueue, q.Flavors); err != nil {
		return nil, err
	}
	for _, t := range q.Teams {
		if err := queue(ns+"-"+t.LocalQueue, t.LocalQueue, t.Flavors); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// flavorSpec is the spec of the ResourceFlavor of f, whose nodes are of
// profile p: its nodeLabels select them by f.NodeLabel, else by the
// profile's GPU product label, else by the profile name (ProfileLabel); its
// tolerations tolerate the profile's taints, with their values where they
// have one.
func flavorSpec(f v1alpha1.QueueFlavor, p fakegpu.Profile) map[string]any {
	key := f.NodeLabel
	if key == "" {
		key = fakegpu.ProfileLabel
		if _, ok := p.Labels[fakegpu.GPUProductLabel]; ok {
			key = fakegpu.GPUProductLabel
		}
	}
	value := p.Labels[key]
	if key == fakegpu.ProfileLabel {
		value = f.Profile
	}
	spec := map[string]any{"nodeLabels": map[string]any{key: value}}
	var tolerations []any
	for _, t := range p.Taints {
		tol := map[string]any{"key": t.Key, "operator": "Exists", "effect": string(t.Effect)}
		if t.Value != "" {
			tol["operator"], tol["value"] = "Equal", t.Value
		}
		tolerations = append(tolerations, tol)
	}
	if len(tolerations) > 0 {
		spec["tolerations"] = tolerations
	}
	return spec
}

func quota(q string) string {
	if q == "" {
		return "0"
	}
	return q
}

// createQueues creates the queueing objects and waits until the
// ClusterQueues and the LocalQueues are Active, and Kueue's TrainJob webhook
// of the namespace's own when it asks for one.
func (s *scenarioRun) createQueues(ctx context.Context) error {
	q, err := s.queues()
	if err != nil || q == nil {
		return err
	}
	c := s.cluster.Client()
	if err := s.installKueueWebhook(ctx); err != nil {
		return err
	}
	for _, o := range q.created() {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("failed to create Kueue %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range slices.Concat(q.clusterQueues, q.localQueues) {
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
	kw, ok := s.cluster.(cluster.KueueWebhooks)
	if !ok {
		return fmt.Errorf("this cluster cannot give Kueue's webhook a reinvocationPolicy")
	}
	cfg, err := kw.KueueTrainJobWebhook(ctx, s.ns, s.nsSuffix(), q.KueueWebhookReinvocation)
	if err != nil {
		return err
	}
	for k, v := range s.clusterLabels() { // for simctl clean, on a cluster simctl did not start
		metav1.SetMetaDataLabel(&cfg.ObjectMeta, k, v)
	}
	c := s.cluster.Client()
	if err := c.Create(ctx, cfg); err != nil {
		return fmt.Errorf("failed to create %s: %w", cfg.Name, err)
	}
	s.kueueWebhook = cfg.Name
	probe := probe.TrainJob(s.ns, "trainersim-kueue-probe", "ClusterTrainingRuntime", "torch-distributed")
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
	q, err := s.queues()
	if err != nil || q == nil {
		return err
	}
	c := s.cluster.Client()
	var errs []error
	if s.kueueWebhook != "" {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		cfg.Name = s.kueueWebhook
		errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, cfg)))
	}
	for _, o := range q.clusterScoped() {
		errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, o)))
	}
	return errors.Join(errs...)
}

// NeedsServing reports whether a scenario of files that will run on a
// cluster of the provider named clusterName (cluster.Kind, cluster.Kubeconfig)
// running the Trainer release trainer (empty: the one compiled in) declares
// webhooks or gates, which simctl serves in its process: the cluster must
// reach them (sim.ClusterOptions.Serve). Scenarios the cluster or the
// release leaves out do not count.
func NeedsServing(files []*scenario.File, clusterName, trainer string) bool {
	if trainer == "" {
		trainer = releases.CompiledTrainerVersion("")
	}
	for _, f := range files {
		sc := f.Scenario
		if c := sc.Spec.Clusters; c != nil && !slices.Contains(c.Only, clusterName) {
			continue
		}
		if !TrainerHolds(sc.Spec.Trainer, trainer) {
			continue
		}
		if len(sc.Spec.Webhooks) > 0 || len(sc.Spec.Gates) > 0 {
			return true
		}
	}
	return false
}

// WithComponents returns have and the components the scenarios of files
// ask for (spec.components), leaving out the scenarios whose Trainer range
// does not hold for the release a cluster will run (trainer; empty: the
// one compiled in, a checkout's version as make found it), which will be
// skipped: what a run on a cluster it starts must start.
func WithComponents(have []string, files []*scenario.File, trainer string) []string {
	if trainer == "" {
		trainer = releases.CompiledTrainerVersion("")
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

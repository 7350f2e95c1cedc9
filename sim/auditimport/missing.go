package auditimport

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// What an audit log may not hold: a runtime created before the log began,
// and the nodes of a cluster whose nodes registered long before. Import
// reads them from the cluster the log came from when it is given one
// (Options.FromCluster), and otherwise writes placeholders
// (v1alpha1.Placeholder), which lint names one by one: the scenario runs
// once they are filled in, never silently without them.

// ClusterError is a read of Options.FromCluster that failed: the cluster
// did not answer, or does not have what the log needs (the runtime was
// deleted since).
type ClusterError struct{ err error }

func (e *ClusterError) Error() string { return e.err.Error() }
func (e *ClusterError) Unwrap() error { return e.err }

// podBinding returns the Pod of namespace that ev bound, and the node: the
// scheduler's binding (its body, recorded at level Request), or a
// kubelet's write of the Pod's status (its user names its node).
func podBinding(ev *event, namespace string) (pod, node string, ok bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "pods" || ref.Namespace != namespace || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
		return "", "", false
	}
	switch {
	case ref.Subresource == "binding" && ev.Verb == "create":
		var body struct {
			Target struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"target"`
		}
		if json.Unmarshal(ev.RequestObject, &body) != nil || body.Target.Name == "" || body.Target.Kind != "" && body.Target.Kind != "Node" {
			return "", "", false
		}
		return ref.Name, body.Target.Name, ref.Name != ""
	case ref.Subresource == "status":
		user, _ := ev.user()
		node, isKubelet := strings.CutPrefix(user, "system:node:")
		return ref.Name, node, isKubelet && ref.Name != "" && node != ""
	}
	return "", "", false
}

// runtimesMissing adds to the set-up each TrainingRuntime a TrainJob
// refers to that the log never writes (created before it began): read
// from the cluster when import has one, else a placeholder of its spec.
// A ClusterTrainingRuntime is left to the replay's cluster, which has the
// release's defaults (docs/record.md: what import does not do yet).
func (b *builder) runtimesMissing(ctx context.Context, writes []*write, cluster client.Reader) error {
	created := map[string]bool{} // a runtime the log creates: its spec is in the log
	later := map[string]int{}    // the log's other writes of a runtime
	for _, w := range writes {
		switch {
		case w.kind != "TrainingRuntime" || w.ev.ResponseStatus == nil || w.ev.ResponseStatus.Code >= 300:
		case w.ev.Verb == "create":
			created[w.name] = true
		default:
			later[w.name]++
		}
	}
	var wanted []string
	for _, w := range writes {
		if w.kind != trainJobKind {
			continue
		}
		for _, obj := range []map[string]any{requestObject(w), responseObject(w)} {
			ref, _ := nested(obj, "spec", "runtimeRef").(map[string]any)
			name, _ := ref["name"].(string)
			kind, _ := ref["kind"].(string)
			if name != "" && kind == "TrainingRuntime" && !created[name] && !slices.Contains(wanted, name) {
				wanted = append(wanted, name)
			}
		}
	}
	spec := &b.res.Scenario.Spec
	var missing []v1alpha1.SetupObject
	for _, name := range wanted {
		obj := v1alpha1.Object{
			"apiVersion": "trainer.kubeflow.org/v1alpha1",
			"kind":       "TrainingRuntime",
			"metadata":   map[string]any{"name": name},
		}
		if cluster == nil {
			obj["spec"] = v1alpha1.Placeholder(fmt.Sprintf("TrainingRuntime %s's spec: the TrainJobs run on it, and the log does not hold it (created before the log began); copy it from the cluster (kubectl get trainingruntime -n %s %s -o yaml)", name, b.namespace, name))
			b.note(fmt.Sprintf("TrainingRuntime %s: the TrainJobs run on it and the log never writes it; spec.setup has a placeholder of its spec (import with --from-cluster KUBECONFIG reads it)", name))
			missing = append(missing, v1alpha1.SetupObject{Object: obj})
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("trainer.kubeflow.org/v1alpha1")
		u.SetKind("TrainingRuntime")
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: b.namespace, Name: name}, u); err != nil {
			return &ClusterError{fmt.Errorf("--from-cluster: TrainingRuntime %s/%s, which the TrainJobs run on and the log does not hold: %w", b.namespace, name, err)}
		}
		read := cleanMap(u.Object)
		if md, ok := read["metadata"].(map[string]any); ok {
			delete(md, "finalizers") // the Trainer's own
			if a, ok := md["annotations"].(map[string]any); ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
				if len(a) == 0 {
					delete(md, "annotations")
				}
			}
		}
		if n := later[name]; n > 0 {
			b.note(fmt.Sprintf("TrainingRuntime %s: not created in the log; read from the cluster as it is now, after the log's %d write(s) to it, which the steps make again: set it as it was before them", name, n))
		} else {
			b.note(fmt.Sprintf("TrainingRuntime %s: not in the log; read from the cluster as it is now", name))
		}
		missing = append(missing, v1alpha1.SetupObject{Object: read})
	}
	spec.Setup = append(missing, spec.Setup...)
	return nil
}

// nodesOfPods are the node groups of the nodes the TrainJobs' Pods were
// bound to, when the log holds none made for the namespace (a cluster's
// nodes, registered before the log began, or made for a kept cluster by
// simctl up): each node from its create in the log, else from the
// cluster, else a placeholder; nil when the log names no such node and
// no Pod of the TrainJobs ran.
func (b *builder) nodesOfPods(ctx context.Context, bound map[string]string, logged map[string]*corev1.Node, cluster client.Reader) ([]v1alpha1.NodeGroup, error) {
	var prefixes []string
	ran := false
	for _, p := range b.pods {
		switch {
		case p.verb == "create" && slices.Contains(b.trainJobs, p.jobSet) && p.generateName != "":
			prefixes = append(prefixes, p.generateName)
		case p.phase == string(corev1.PodRunning) || p.phase == string(corev1.PodSucceeded) || p.phase == string(corev1.PodFailed):
			ran = true
		}
	}
	names := map[string]bool{}
	for pod, node := range bound {
		if slices.ContainsFunc(prefixes, func(prefix string) bool { return strings.HasPrefix(pod, prefix) }) {
			names[node] = true
		}
	}
	if len(names) == 0 {
		if !ran {
			return nil, nil
		}
		b.note("nodes: the TrainJobs' Pods ran, and the log names none of their nodes (record pods/binding at level Request: docs/record.md); spec.nodes has a placeholder")
		return []v1alpha1.NodeGroup{{Profile: v1alpha1.Placeholder("the profile of the nodes the Pods ran on, which the log does not name; simctl profiles lists them"), Count: 1}}, nil
	}
	var nodes []*corev1.Node
	var unknown []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		switch n, ok := logged[name]; {
		case ok:
			nodes = append(nodes, n)
		case cluster != nil:
			n := &corev1.Node{}
			if err := cluster.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return nil, &ClusterError{fmt.Errorf("--from-cluster: node %s, which the TrainJobs' Pods were bound to: %w", name, err)}
			}
			nodes = append(nodes, n)
		default:
			unknown = append(unknown, name)
		}
	}
	var groups []v1alpha1.NodeGroup
	add := func(g v1alpha1.NodeGroup) {
		for i := range groups {
			if c := groups[i]; c.Profile == g.Profile && reflect.DeepEqual(c.Labels, g.Labels) && reflect.DeepEqual(c.Taints, g.Taints) {
				groups[i].Count++
				return
			}
		}
		groups = append(groups, g)
	}
	for _, n := range nodes {
		profile, ok := nodeProfile(n)
		if !ok {
			add(v1alpha1.NodeGroup{Profile: v1alpha1.Placeholder(fmt.Sprintf("a profile for node %s (%s), which no profile matches; simctl profiles lists them", n.Name, gpuOf(n))), Count: 1})
			continue
		}
		add(v1alpha1.NodeGroup{Profile: profile.Name, Count: 1, Labels: addedLabels(n.Labels, profile), Taints: addedTaints(n.Spec.Taints, profile)})
	}
	if len(unknown) > 0 {
		b.note(fmt.Sprintf("nodes %s: the TrainJobs' Pods were bound to them, and the log does not hold them (import with --from-cluster KUBECONFIG reads them); spec.nodes has a placeholder", strings.Join(unknown, ", ")))
		groups = append(groups, v1alpha1.NodeGroup{Profile: v1alpha1.Placeholder(fmt.Sprintf("the profile of nodes %s, where the Pods ran, which the log does not hold; simctl profiles lists them", strings.Join(unknown, ", "))), Count: len(unknown)})
	}
	return groups, nil
}

// nodeProfile is the profile node n was made from (its profile label, on
// simctl's clusters), or else the one that looks like it: as many GPUs,
// and of its product when the profile names one.
func nodeProfile(n *corev1.Node) (fakegpu.Profile, bool) {
	if p, err := fakegpu.LookupProfile(n.Labels[fakegpu.ProfileLabel]); err == nil {
		return p, true
	}
	gpus := n.Status.Capacity[fakegpu.ResourceGPU]
	for _, p := range fakegpu.Profiles() {
		if p.GPUs() != gpus.Value() {
			continue
		}
		if product, ok := p.Labels[gpuProductLabel]; ok && n.Labels[gpuProductLabel] != product {
			continue
		}
		return p, true
	}
	return fakegpu.Profile{}, false
}

// gpuProductLabel is GPU Feature Discovery's label of a node's GPU model.
const gpuProductLabel = "nvidia.com/gpu.product"

// gpuOf says what GPUs node n has, for a placeholder.
func gpuOf(n *corev1.Node) string {
	gpus := n.Status.Capacity[fakegpu.ResourceGPU]
	if gpus.IsZero() {
		return "no GPU"
	}
	if product := n.Labels[gpuProductLabel]; product != "" {
		return fmt.Sprintf("%s GPUs %s", gpus.String(), product)
	}
	return gpus.String() + " GPUs"
}

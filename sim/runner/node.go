package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/scenario"
)

// The node Lease an unreachable step takes over from the simulated kubelet.
// kwok renews a Lease only while it holds it or once the Lease has expired
// (tryAcquireOrRenew in sigs.k8s.io/kwok's node lease controller), so a
// holder of its own with a duration longer than any scenario stops its
// renewals until ready gives the Lease back.
const (
	// unreachableLeaseHolder is the holderIdentity of a Lease taken over.
	unreachableLeaseHolder = "trainersim-unreachable"
	// unreachableLeaseDuration is its leaseDurationSeconds: an hour.
	unreachableLeaseDuration = time.Hour
)

// nodeWrite is the writer of a node step. Every request it sends is one a
// kubelet (notReady, ready) or an admin with kubectl (cordon, uncordon,
// drain, delete) sends, or the harness's hold on the simulated kubelet
// (its marker; for unreachable and ready, its Lease: a kubelet that stops
// sends nothing); the first refusal ends the step.
func nodeWrite(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
	n := st.Node
	ref, err := v1alpha1.ResolveNode(s.sc.Spec.Nodes, n.Name)
	if err != nil {
		return err
	}
	name := s.nodeName(ref)
	nodes, _, err := s.resource(a.client, "v1", "Node", "")
	if err != nil {
		return err
	}
	pods, _, err := s.resource(a.client, "v1", "Pod", "")
	if err != nil {
		return err
	}
	leases, _, err := s.resource(a.client, "coordination.k8s.io/v1", "Lease", corev1.NamespaceNodeLease)
	if err != nil {
		return err
	}
	p.target = writeTarget{kind: "Node", name: name}
	p.sent = n
	patch := func(ctx context.Context, pt types.PatchType, body any, subresources ...string) (*unstructured.Unstructured, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		return nodes.Patch(ctx, name, pt, b, metav1.PatchOptions{FieldManager: a.fieldManager}, subresources...)
	}
	// The simulated kubelet (kwok) acts only on nodes with its marker
	// annotation: without it, nothing resets the node's status.
	marker := func(v any) map[string]any {
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{fakegpu.KwokNodeAnnotation: v}}}
	}
	cordon := func(ctx context.Context, unschedulable bool) (*unstructured.Unstructured, error) {
		return patch(ctx, types.MergePatchType, map[string]any{"spec": map[string]any{"unschedulable": unschedulable}})
	}
	switch n.Action {
	case v1alpha1.NodeNotReady:
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			if _, err := patch(ctx, types.MergePatchType, marker(nil)); err != nil {
				return nil, err
			}
			return patch(ctx, types.StrategicMergePatchType, notReadyStatus(s.clock.Now()), "status")
		}
	case v1alpha1.NodeUnreachable:
		// The Lease first: a refusal there leaves the node as it was.
		// Without the marker, kwok leaves the node's status alone too,
		// and the volume manager its Pods.
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			if err := takeOverLease(ctx, leases, name, a.fieldManager); err != nil {
				return nil, err
			}
			return patch(ctx, types.MergePatchType, marker(nil))
		}
	case v1alpha1.NodeReady:
		// The marker first: kwok, once it holds the Lease again, manages
		// the node (its onNodeManaged hook) whatever the marker says,
		// and from then on acts on the node's events only with it.
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			node, err := patch(ctx, types.MergePatchType, marker(fakegpu.KwokNodeAnnotationValue))
			if err != nil {
				return nil, err
			}
			return node, releaseLease(ctx, leases, name, a.fieldManager)
		}
	case v1alpha1.NodeCordon, v1alpha1.NodeUncordon:
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return cordon(ctx, n.Action == v1alpha1.NodeCordon)
		}
	case v1alpha1.NodeDrain:
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			node, err := cordon(ctx, true)
			if err != nil {
				return nil, err
			}
			return node, s.evictAll(ctx, pods, name)
		}
	case v1alpha1.NodeDelete:
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return nil, nodes.Delete(ctx, name, metav1.DeleteOptions{})
		}
	default:
		return fmt.Errorf("unknown node action %q", n.Action)
	}
	return nil
}

// notReadyStatus is the status patch of a kubelet that reports its node
// not ready: the Ready condition False with the kubelet's reason.
func notReadyStatus(now time.Time) map[string]any {
	ts := metav1.NewTime(now).Rfc3339Copy()
	return map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type":               corev1.NodeReady,
		"status":             corev1.ConditionFalse,
		"reason":             "KubeletNotReady",
		"message":            "container runtime network not ready (trainersim node step)",
		"lastHeartbeatTime":  ts,
		"lastTransitionTime": ts,
	}}}}
}

// leaseTakeover is the merge patch by which unreachable takes a node's
// Lease over. RenewTime is left as the kubelet last set it: the
// node-lifecycle controller takes a later renewTime for a heartbeat, and
// there is none after the kubelet stops.
func leaseTakeover() map[string]any {
	return map[string]any{"spec": map[string]any{
		"holderIdentity":       unreachableLeaseHolder,
		"leaseDurationSeconds": int64(unreachableLeaseDuration / time.Second),
	}}
}

// leaseRelease is the merge patch by which ready gives a Lease unreachable
// took back: without a holder, kwok's next renewal (within a quarter of its
// 40s lease duration) acquires it, and a Lease it acquires makes it manage
// the node and its Pods again.
func leaseRelease() map[string]any {
	return map[string]any{"spec": map[string]any{"holderIdentity": nil}}
}

// takenOver reports whether an unreachable step holds the Lease.
func takenOver(lease *unstructured.Unstructured) bool {
	holder, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity")
	return holder == unreachableLeaseHolder
}

// takeOverLease takes the node's Lease from the simulated kubelet, with a
// merge patch that carries no resourceVersion: a renewal kwok sends with
// the Lease it read before is refused with a conflict, and the ones after
// wait for the Lease to expire.
func takeOverLease(ctx context.Context, leases dynamic.ResourceInterface, node, fieldManager string) error {
	if err := patchLease(ctx, leases, node, fieldManager, leaseTakeover()); err != nil {
		return fmt.Errorf("failed to take over the Lease of node %s: %w", node, err)
	}
	return nil
}

// releaseLease gives the node's Lease back when an unreachable step holds
// it; a Lease kwok holds, or none, is left as it is.
func releaseLease(ctx context.Context, leases dynamic.ResourceInterface, node, fieldManager string) error {
	lease, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to get the Lease of node %s: %w", node, err)
	}
	if !takenOver(lease) {
		return nil
	}
	if err := patchLease(ctx, leases, node, fieldManager, leaseRelease()); err != nil {
		return fmt.Errorf("failed to release the Lease of node %s: %w", node, err)
	}
	return nil
}

func patchLease(ctx context.Context, leases dynamic.ResourceInterface, node, fieldManager string, body map[string]any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = leases.Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// evictAll evicts every Pod of the scenario's namespace bound to the node,
// in name order, through the Eviction API as kubectl drain does. The first
// refusal (a PodDisruptionBudget's 429) ends it, naming the Pod.
func (s *scenarioRun) evictAll(ctx context.Context, pods dynamic.ResourceInterface, node string) error {
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return fmt.Errorf("failed to list the Pods on node %s: %w", node, err)
	}
	var names []string
	for _, pod := range list.Items {
		names = append(names, pod.GetName())
	}
	sort.Strings(names)
	for _, name := range names {
		eviction := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "policy/v1",
			"kind":       "Eviction",
			"metadata":   map[string]any{"name": name, "namespace": s.ns},
		}}
		if _, err := pods.Create(ctx, eviction, metav1.CreateOptions{}, "eviction"); err != nil {
			return fmt.Errorf("failed to evict Pod %s: %w", name, err)
		}
	}
	return nil
}

// nodeTarget names a Node target as node steps do (<group>-<i>): a Node
// target whose name resolves to one of the scenario's nodes gets the
// node's real name; any other target is returned as it is.
func (s *scenarioRun) nodeTarget(t v1alpha1.Target) v1alpha1.Target {
	if t.Kind != "Node" {
		return t
	}
	if ref, err := v1alpha1.ResolveNode(s.sc.Spec.Nodes, t.Name); err == nil {
		t.Name = s.nodeName(ref)
	}
	return t
}

// nodeName is the name of a node of the scenario's spec.nodes.
func (s *scenarioRun) nodeName(ref v1alpha1.NodeRef) string {
	return fmt.Sprintf("%s-%d", s.groupPrefix(ref.Group), ref.Index)
}

// groupPrefix is the NamePrefix of the scenario's node group i.
func (s *scenarioRun) groupPrefix(i int) string {
	return fmt.Sprintf("%s-%d-%s", nodePrefix(s.ns), i, s.sc.Spec.Nodes[i].Profile)
}

// HeartbeatFor returns the heartbeat a cluster simctl starts for the
// scenarios of files should run (envtest.Environment.Heartbeat,
// kind.Kind.Heartbeat): the Kubernetes defaults (a Lease renewed every
// 10 s, 50 s of grace), unless a scenario the run will not skip (its
// Trainer range holds for trainer; empty: the one compiled in) takes a node
// unreachable. Only a missed Lease renewal waits for the grace period, and
// such a scenario gets the fast heartbeat (every 4 s, 20 s of grace), which
// halves its length. Either is a heartbeat a real cluster runs; the
// defaults send 2.5 times fewer renewals, which a fleet of nodes feels.
func HeartbeatFor(files []*scenario.File, trainer string) fakegpu.Heartbeat {
	if trainer == "" {
		trainer = releases.CompiledTrainerVersion("")
	}
	for _, f := range files {
		if TrainerHolds(f.Scenario.Spec.Trainer, trainer) && takesNodeUnreachable(f.Scenario.Spec.Steps) {
			return fakegpu.FastHeartbeat
		}
	}
	return fakegpu.KubernetesHeartbeat
}

// takesNodeUnreachable reports whether a step of steps, or of their
// concurrent writes, takes a node unreachable.
func takesNodeUnreachable(steps []v1alpha1.Step) bool {
	for _, st := range steps {
		if st.Node != nil && st.Node.Action == v1alpha1.NodeUnreachable {
			return true
		}
		if st.Concurrently != nil && takesNodeUnreachable(st.Concurrently.Writes) {
			return true
		}
	}
	return false
}

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// nodeWrite is the writer of a node step. Every request it sends is one a
// kubelet (notReady, ready) or an admin with kubectl (cordon, uncordon,
// drain, delete) sends; the first refusal ends the step.
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
	case v1alpha1.NodeReady:
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return patch(ctx, types.MergePatchType, marker(fakegpu.KwokNodeAnnotationValue))
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

package runner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

var leaseResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// kwokLease is a node's Lease as kwok v0.8.0 writes it: its own holder,
// the kubelet's 40s, the Node as owner.
func kwokLease(node string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "coordination.k8s.io/v1",
		"kind":       "Lease",
		"metadata": map[string]any{
			"name":      node,
			"namespace": corev1.NamespaceNodeLease,
			"ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "Node", "name": node, "uid": "4f1c",
			}},
		},
		"spec": map[string]any{
			"holderIdentity":       "kwok-controller",
			"leaseDurationSeconds": int64(40),
			"leaseTransitions":     int64(1),
			"renewTime":            "2006-01-02T15:04:05.000000Z",
		},
	}}
}

func leaseClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{leaseResource: "LeaseList"}, objs...)
}

func getLease(t *testing.T, c *dynamicfake.FakeDynamicClient, node string) map[string]any {
	t.Helper()
	l, err := c.Resource(leaseResource).Namespace(corev1.NamespaceNodeLease).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("failed to get lease %s: %v", node, err)
	}
	return l.Object
}

func patches(c *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestTakeOverLease(t *testing.T) {
	const node = "ns-0-nvidia-h100-80gb-0"
	c := leaseClient(kwokLease(node))
	leases := c.Resource(leaseResource).Namespace(corev1.NamespaceNodeLease)
	if err := takeOverLease(context.Background(), leases, node, "simctl"); err != nil {
		t.Fatalf("takeOverLease: %v", err)
	}
	// Only the holder and its duration change: the renewTime stays the
	// kubelet's last, so that the node-lifecycle controller sees no
	// heartbeat in the takeover, and the Node stays the owner, so that
	// the Lease goes with the Node.
	want := kwokLease(node).Object
	want["spec"].(map[string]any)["holderIdentity"] = unreachableLeaseHolder
	want["spec"].(map[string]any)["leaseDurationSeconds"] = int64(3600)
	got := getLease(t, c, node)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lease after takeover mismatch (-want +got):\n%s", diff)
	}
	if !takenOver(&unstructured.Unstructured{Object: got}) {
		t.Errorf("takenOver = false after takeover, want true")
	}

	if err := releaseLease(context.Background(), leases, node, "simctl"); err != nil {
		t.Fatalf("releaseLease: %v", err)
	}
	// Without a holder, kwok acquires the Lease at its next renewal.
	delete(want["spec"].(map[string]any), "holderIdentity")
	if diff := cmp.Diff(want, getLease(t, c, node)); diff != "" {
		t.Errorf("lease after release mismatch (-want +got):\n%s", diff)
	}
}

func TestReleaseLeaseLeavesOthers(t *testing.T) {
	const node = "ns-0-cpu-0"
	for _, tc := range []struct {
		name  string
		objs  []runtime.Object
		lease bool
	}{
		{name: "a Lease kwok holds (ready after notReady)", objs: []runtime.Object{kwokLease(node)}, lease: true},
		{name: "no Lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := leaseClient(tc.objs...)
			leases := c.Resource(leaseResource).Namespace(corev1.NamespaceNodeLease)
			if err := releaseLease(context.Background(), leases, node, "simctl"); err != nil {
				t.Fatalf("releaseLease: %v", err)
			}
			if n := patches(c); n != 0 {
				t.Errorf("releaseLease sent %d patches, want none", n)
			}
			if tc.lease {
				if diff := cmp.Diff(kwokLease(node).Object, getLease(t, c, node)); diff != "" {
					t.Errorf("lease mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestHeartbeatFor: a run gets the fast heartbeat only when a scenario it
// will not skip takes a node unreachable, in a step or a concurrent write.
func TestHeartbeatFor(t *testing.T) {
	file := func(versions string, steps ...v1alpha1.Step) *scenario.File {
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{
			Trainer: &v1alpha1.Trainer{Versions: versions}, Steps: steps,
		}}}
	}
	node := func(action string) v1alpha1.Step {
		return v1alpha1.Step{Node: &v1alpha1.NodeAction{Name: "gpu-0", Action: action}}
	}
	unreachable, notReady := node(v1alpha1.NodeUnreachable), node(v1alpha1.NodeNotReady)
	concurrent := v1alpha1.Step{Concurrently: &v1alpha1.Concurrently{Writes: []v1alpha1.Step{notReady, unreachable}}}
	for _, tc := range []struct {
		name    string
		files   []*scenario.File
		trainer string
		want    fakegpu.Heartbeat
	}{
		{"no node steps", []*scenario.File{file(">=v2.1.0")}, "", fakegpu.KubernetesHeartbeat},
		{"not ready waits for no grace", []*scenario.File{file(">=v2.1.0", notReady)}, "", fakegpu.KubernetesHeartbeat},
		{"unreachable", []*scenario.File{file(">=v2.1.0"), file(">=v2.1.0", notReady, unreachable)}, "", fakegpu.FastHeartbeat},
		{"unreachable in a concurrent write", []*scenario.File{file(">=v2.1.0", concurrent)}, "", fakegpu.FastHeartbeat},
		{"unreachable in a scenario the release skips", []*scenario.File{file(">=v2.3.0", unreachable)}, "v2.2.0", fakegpu.KubernetesHeartbeat},
		{"unreachable in a scenario the release runs", []*scenario.File{file(">=v2.2.0", unreachable)}, "v2.2.0", fakegpu.FastHeartbeat},
	} {
		if got := HeartbeatFor(tc.files, tc.trainer); got != tc.want {
			t.Errorf("%s: HeartbeatFor = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestSeedProfiles: the profiles of the scenario's own nodes are known from
// their groups once created, without reading the nodes (the scenario run
// has no cluster here: a read would panic); a node not created is not
// recorded.
func TestSeedProfiles(t *testing.T) {
	s := &scenarioRun{ns: "sim-x", profiles: map[string]string{}, sc: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Nodes: []v1alpha1.NodeGroup{
		{Profile: "nvidia-h100-80gb", Count: 2},
		{Profile: "cpu", Count: 1},
	}}}}
	h0, h1 := s.nodeName(v1alpha1.NodeRef{Group: 0, Index: 0}), s.nodeName(v1alpha1.NodeRef{Group: 0, Index: 1})
	cpu := s.nodeName(v1alpha1.NodeRef{Group: 1, Index: 0})
	s.seedProfiles([]string{h0, cpu})
	ctx := context.Background()
	for name, want := range map[string]string{h0: "nvidia-h100-80gb", cpu: "cpu"} {
		if got := s.nodeProfile(ctx, name); got != want {
			t.Errorf("nodeProfile(%s) = %q, want %q", name, got, want)
		}
	}
	if _, ok := s.profiles[h1]; ok {
		t.Errorf("%s, not created, has a profile recorded", h1)
	}
}

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

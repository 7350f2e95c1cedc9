package envtest

import (
	"strings"
	"testing"

	"github.com/trainersim/trainersim/fakegpu"
)

// TestHollowArgs: a hollow kubelet registers its node with the profile's
// capacity (GPUs as extended resources), taints and the labels a kubelet
// may set; the labels NodeRestriction refuses a kubelet are simctl's to
// set, and KWOK's marker is on neither.
func TestHollowArgs(t *testing.T) {
	nodes, err := fakegpu.BuildNodes([]fakegpu.NodeGroup{{Profile: "nvidia-h100-80gb", Count: 1, Kubelet: fakegpu.KubeletHollow,
		Labels: map[string]string{"pool": "a", "node-role.kubernetes.io/gpu": ""}}})
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	args := strings.Join(hollowArgs(n, "/k"), " ")
	for _, want := range []string{"--name=" + n.Name, "nvidia.com/gpu=8", "pool=a", "trainersim.dev/profile=nvidia-h100-80gb", "nvidia.com/gpu=present:NoSchedule"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s lack %s", args, want)
		}
	}
	for _, not := range []string{"=" + fakegpu.KwokNodeLabel + "=", "," + fakegpu.KwokNodeLabel + "=", fakegpu.ManagedByLabel, "node-role.kubernetes.io"} {
		if strings.Contains(args, not) {
			t.Errorf("args %s have %s, which the kubelet may not or must not set", args, not)
		}
	}
	admin := adminLabels(n)
	if _, role := admin["node-role.kubernetes.io/gpu"]; admin[fakegpu.ManagedByLabel] != fakegpu.ManagedByValue || !role {
		t.Errorf("simctl's labels %v lack %s and the node role", admin, fakegpu.ManagedByLabel)
	}
}

// TestKubeletMaySet: labels outside the Kubernetes namespaces, and in them
// those the kubelet's IsKubeletLabel allows; not the others.
func TestKubeletMaySet(t *testing.T) {
	for _, k := range []string{"pool", "nvidia.com/gpu.product", "kubernetes.io/os", "node.kubernetes.io/instance-type", "foo.node.kubernetes.io/x", "kubelet.kubernetes.io/y", "topology.kubernetes.io/zone"} {
		if !kubeletMaySet(k) {
			t.Errorf("a kubelet may set %s", k)
		}
	}
	for _, k := range []string{"app.kubernetes.io/managed-by", "node-role.kubernetes.io/gpu", "k8s.io/x", "example.k8s.io/y"} {
		if kubeletMaySet(k) {
			t.Errorf("NodeRestriction refuses a kubelet %s", k)
		}
	}
}

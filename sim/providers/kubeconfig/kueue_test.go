package kubeconfig

import "testing"

// TestKueueImageTag: the version of a Kueue that runs is its image's tag,
// digest or not, and another image is not Kueue's.
func TestKueueImageTag(t *testing.T) {
	for _, tc := range []struct {
		image string
		tag   string
		ok    bool
	}{
		{"registry.k8s.io/kueue/kueue:v0.19.1", "v0.19.1", true},
		{"registry.k8s.io/kueue/kueue:v0.19.1@sha256:0123", "v0.19.1", true},
		{"localhost:5000/kueue:v0.20.0-rc.1", "v0.20.0-rc.1", true},
		{"registry.k8s.io/kueue/kueue@sha256:0123", "", false},
		{"registry.k8s.io/kueue/kueueviz-backend:v0.19.1", "", false},
		{"ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.3.0", "", false},
	} {
		tag, ok := kueueImageTag(tc.image)
		if tag != tc.tag && tc.ok || ok != tc.ok {
			t.Errorf("kueueImageTag(%q) = %q, %v; want %q, %v", tc.image, tag, ok, tc.tag, tc.ok)
		}
	}
}

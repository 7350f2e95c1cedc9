package sim

// KubernetesVersion is the version of the control plane the harness runs. It
// must equal the k8s.io/kubernetes version in hack/controlplane/go.mod, which
// is what `make assets` builds (a unit test checks that they agree).
const KubernetesVersion = "1.36.3"

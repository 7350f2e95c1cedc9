package releases

// KubernetesVersion is the version of the control plane the harness runs. It
// must equal the k8s.io/kubernetes version in hack/controlplane/go.mod, which
// is what `make assets` builds (a unit test checks that they agree).
const KubernetesVersion = "1.36.3"

// KwokVersion is the version of sigs.k8s.io/kwok that `make assets` and
// `make kind-images` build. It must equal the one in hack/kwok/go.mod (a
// unit test checks).
const KwokVersion = "v0.8.0"

// KwokImage is the kwok image `make kind-images` builds, named as kwok's own
// releases are.
const KwokImage = "registry.k8s.io/kwok/kwok:" + KwokVersion

// TrainerVersion and JobSetVersion are the releases go.mod pins (a unit test
// checks): the tags of the controller images the kind provider runs, as
// `make kind-images` builds them and the install manifest names them.
const (
	TrainerVersion = "v2.3.0"
	JobSetVersion  = "v0.12.0"
)

// KueueVersion is the Kueue release the kueue component runs (a unit test
// keeps it and hack/kueue/ in step).
const KueueVersion = "v0.19.1"

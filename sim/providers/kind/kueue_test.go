package kind

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/kueue"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// kueueManifest returns what kueueObjects reads from, unchanged, by kind.
func kueueManifest(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.ReadObjects(fixtures.FS, fixtures.KueueInstall)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	return byKind
}

// TestKueueManifest keeps Kueue's release manifest what the kind provider
// expects of it: one Deployment, the one the kubeconfig provider looks
// for, of the image `make kind-images` builds, run as the ServiceAccount
// sim/identity gives Kueue (so that its requests are recognised as Kueue's,
// as on envtest), its configuration in kueueConfigMap.
func TestKueueManifest(t *testing.T) {
	byKind := kueueManifest(t)
	if len(byKind["Deployment"]) != 1 {
		t.Fatalf("Kueue's manifest has %d Deployments, want 1", len(byKind["Deployment"]))
	}
	d := byKind["Deployment"][0]
	if got := client.ObjectKeyFromObject(d); got != kubeconfig.KueueDeployment {
		t.Errorf("Kueue's Deployment is %s, want %s (kubeconfig.KueueDeployment)", got, kubeconfig.KueueDeployment)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var images []string
	for _, c := range containers {
		images = append(images, c.(map[string]any)["image"].(string))
	}
	if diff := cmp.Diff([]string{"registry.k8s.io/kueue/kueue:" + releases.KueueVersion}, images); diff != "" {
		t.Errorf("images of Kueue's Deployment mismatch (-want +got):\n%s", diff)
	}
	account, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	id, _ := identity.Of(identity.Kueue)
	if got := "system:serviceaccount:" + d.GetNamespace() + ":" + account; got != id.User {
		t.Errorf("Kueue's Deployment runs as %s, but sim/identity says Kueue is %s", got, id.User)
	}
	if !slices.ContainsFunc(byKind["ConfigMap"], func(u *unstructured.Unstructured) bool { return u.GetName() == kueueConfigMap }) {
		t.Errorf("Kueue's manifest has no ConfigMap %s", kueueConfigMap)
	}
}

// TestKueueObjects checks every change the kind provider makes to Kueue's
// manifest, and that it makes no other.
func TestKueueObjects(t *testing.T) {
	upstream := kueueManifest(t)
	objs, err := kueueObjects()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]client.Object{}
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		got[kind] = append(got[kind], o)
	}

	// The visibility API's APIServices go; nothing else does.
	if len(upstream["APIService"]) != 2 || len(got["APIService"]) != 0 {
		t.Errorf("APIServices: %d upstream, %d installed; want 2 and none", len(upstream["APIService"]), len(got["APIService"]))
	}
	for kind, objs := range upstream {
		if kind != "APIService" && len(got[kind]) != len(objs) {
			t.Errorf("%d %ss installed, want upstream's %d", len(got[kind]), kind, len(objs))
		}
	}

	// The Deployment: the image as loaded, off simulated nodes.
	d := got["Deployment"][0].(*unstructured.Unstructured)
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if policy := containers[0].(map[string]any)["imagePullPolicy"]; policy != "IfNotPresent" {
		t.Errorf("Kueue's imagePullPolicy is %v, want IfNotPresent", policy)
	}
	if _, found, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "affinity", "nodeAffinity"); !found {
		t.Error("Kueue's Deployment may be placed on simulated nodes")
	}

	// The configuration: upstream's serving settings, what Kueue does as on
	// every cluster.
	for _, o := range got["ConfigMap"] {
		if o.GetName() != kueueConfigMap {
			continue
		}
		text, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "data", kueueConfigKey)
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			t.Fatal(err)
		}
		wantFromKueue, _ := kueue.Configuration([]byte("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"))
		var behaviour map[string]any
		if err := yaml.Unmarshal(wantFromKueue, &behaviour); err != nil {
			t.Fatal(err)
		}
		for k, v := range behaviour {
			if diff := cmp.Diff(v, cfg[k]); diff != "" {
				t.Errorf("configuration's %s mismatch (-want +got):\n%s", k, diff)
			}
		}
		for _, serving := range []string{"webhook", "leaderElection", "metrics", "health", "clientConnection"} {
			if _, ok := cfg[serving]; !ok {
				t.Errorf("configuration lost upstream's %s", serving)
			}
		}
		if _, ok := cfg["internalCertManagement"]; ok {
			t.Error("configuration sets internalCertManagement: upstream's default (on) must stay")
		}
	}

	// The webhooks: those every cluster gets, with their selectors, served
	// by upstream's service.
	selectors := map[string]*metav1.LabelSelector{}
	for _, o := range append(got["MutatingWebhookConfiguration"], got["ValidatingWebhookConfiguration"]...) {
		u := o.(*unstructured.Unstructured)
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found {
			t.Errorf("%s carries a creationTimestamp to apply", u.GetName())
		}
		var hooks []admissionv1.ValidatingWebhook // the fields read below are common to both kinds
		list, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, w := range list {
			var hook admissionv1.ValidatingWebhook
			if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(w.(map[string]any), &hook); err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, hook)
		}
		for _, w := range hooks {
			selectors[w.Name] = w.NamespaceSelector
			if s := w.ClientConfig.Service; s == nil || s.Name != "kueue-webhook-service" || s.Namespace != "kueue-system" {
				t.Errorf("webhook %s is not served by upstream's kueue-system/kueue-webhook-service: %+v", w.Name, w.ClientConfig)
			}
		}
	}
	want := map[string]*metav1.LabelSelector{}
	for _, name := range kueue.Webhooks {
		want[name] = kueue.Selector(name)
	}
	if diff := cmp.Diff(want, selectors); diff != "" {
		t.Errorf("webhooks and their namespace selectors mismatch (-want +got):\n%s", diff)
	}
}

// TestKueueImageOnlyWhenAsked: the Kueue image is loaded only into a
// cluster whose run needs Kueue.
func TestKueueImageOnlyWhenAsked(t *testing.T) {
	if got := (&Kind{}).componentImages(); len(got) != 0 {
		t.Errorf("a run without components loads %v", got)
	}
	if diff := cmp.Diff([]string{kueueImage}, (&Kind{Components: []string{releases.ComponentKueue}}).componentImages()); diff != "" {
		t.Errorf("images of a run with Kueue mismatch (-want +got):\n%s", diff)
	}
}

package kueue

import (
	"path"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// TestNarrow: of the pinned release's webhooks, exactly Webhooks are kept;
// the namespaced ones see the labelled namespaces only, the TrainJob
// defaulting webhook not those with a copy of their own, the others every
// namespace.
func TestNarrow(t *testing.T) {
	file := path.Join(fixtures.ComponentsDir, releases.ComponentKueue, releases.KueueVersion, "webhooks.yaml")
	muts, vals, err := manifests.ReadWebhooks(fixtures.FS, file, "kueue-")
	if err != nil {
		t.Fatal(err)
	}
	Narrow(muts, vals)
	selectors := map[string]*metav1.LabelSelector{}
	for _, m := range muts {
		for _, w := range m.Webhooks {
			selectors[w.Name] = w.NamespaceSelector
		}
	}
	for _, v := range vals {
		for _, w := range v.Webhooks {
			selectors[w.Name] = w.NamespaceSelector
		}
	}
	var kept []string
	for name := range selectors {
		kept = append(kept, name)
	}
	slices.Sort(kept)
	want := slices.Sorted(slices.Values(Webhooks))
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("webhooks kept mismatch (-want +got):\n%s", diff)
	}
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{cluster.KueueNamespaceLabel: "true"}}
	withoutCopy := labelled.DeepCopy()
	withoutCopy.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: cluster.KueueReinvocationLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}
	wantSelectors := map[string]*metav1.LabelSelector{
		TrainJobWebhook: withoutCopy, "vtrainjob.kb.io": labelled, "mworkload.kb.io": labelled, "vworkload.kb.io": labelled,
		"mclusterqueue.kb.io": nil, "vclusterqueue.kb.io": nil, "vcohort.kb.io": nil,
		"mresourceflavor.kb.io": nil, "vresourceflavor.kb.io": nil,
	}
	if diff := cmp.Diff(wantSelectors, selectors); diff != "" {
		t.Errorf("namespace selectors mismatch (-want +got):\n%s", diff)
	}
}

// TestConfiguration: what Kueue does is set whatever the provider's serving
// settings say, which are kept.
func TestConfiguration(t *testing.T) {
	serving := []byte(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
webhook:
  port: 9443
leaderElection:
  leaderElect: true
integrations:
  frameworks:
  - batch/job
  - trainer.kubeflow.org/trainjob
  - pod
`)
	out, err := Configuration(serving)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion":                   "config.kueue.x-k8s.io/v1beta2",
		"kind":                         "Configuration",
		"webhook":                      map[string]any{"port": float64(9443)},
		"leaderElection":               map[string]any{"leaderElect": true},
		"manageJobsWithoutQueueName":   false,
		"managedJobsNamespaceSelector": map[string]any{"matchLabels": map[string]any{cluster.KueueNamespaceLabel: "true"}},
		"integrations":                 map[string]any{"frameworks": []any{"trainer.kubeflow.org/trainjob"}},
		"featureGates":                 map[string]any{"VisibilityOnDemand": false, "DisableWaitForPodsReady": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration mismatch (-want +got):\n%s", diff)
	}
	if _, err := Configuration([]byte("apiVersion: v1\nkind: ConfigMap\n")); err == nil {
		t.Error("a ConfigMap was taken for Kueue's configuration")
	}
}

// TestOwnTrainJobWebhook: the copy calls Kueue as the installed webhook
// does, for the namespace alone, with the policy asked for.
func TestOwnTrainJobWebhook(t *testing.T) {
	installed := &admissionv1.MutatingWebhook{
		Name: TrainJobWebhook,
		ClientConfig: admissionv1.WebhookClientConfig{
			Service:  &admissionv1.ServiceReference{Namespace: "kueue-system", Name: "kueue-webhook-service", Path: ptr.To("/mutate-trainer-kubeflow-org-v1alpha1-trainjob")},
			CABundle: []byte("ca"),
		},
		NamespaceSelector: Selector(TrainJobWebhook),
	}
	got := OwnTrainJobWebhook(installed, "ns-1", "abcd", "IfNeeded")
	want := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kueue-mutating-webhook-configuration-abcd", Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:               TrainJobWebhook,
			ClientConfig:       installed.ClientConfig,
			NamespaceSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ns-1"}},
			ReinvocationPolicy: ptr.To(admissionv1.IfNeededReinvocationPolicy),
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration mismatch (-want +got):\n%s", diff)
	}
	if installed.ReinvocationPolicy != nil || installed.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "" {
		t.Error("the installed webhook was changed")
	}
}

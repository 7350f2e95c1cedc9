// Package kueue holds what the providers that run the Kueue component share,
// so that Kueue behaves alike on every cluster simctl starts it on (a process
// of an envtest cluster, a Deployment of a kind cluster): which of its
// webhooks a cluster gets and for which namespaces (Webhooks, Narrow), the
// settings of its Configuration that decide what it manages and how
// (Configuration), and a namespace's own copy of its TrainJob defaulting
// webhook (OwnTrainJobWebhook). How Kueue is served (its address, its
// certificates, leader election, metrics) stays each provider's.
package kueue

import (
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/sim/cluster"
)

// TrainJobWebhook is Kueue's TrainJob defaulting webhook.
const TrainJobWebhook = "mtrainjob.kb.io"

// TrainJobWebhookConfiguration is the name of the configuration that holds
// TrainJobWebhook as Kueue's config/default names it; a namespace's own copy
// is named after it (OwnTrainJobWebhook).
const TrainJobWebhookConfiguration = "kueue-mutating-webhook-configuration"

// Webhooks are the webhooks of Kueue's manifest that a cluster gets: the
// TrainJob integration's and those of the queueing objects. The others
// (Pods, Deployments, Jobs, ... of the integrations it does not run) would
// put those objects' writes behind Kueue.
var Webhooks = []string{
	TrainJobWebhook, "vtrainjob.kb.io",
	"mclusterqueue.kb.io", "vclusterqueue.kb.io", "vcohort.kb.io",
	"mresourceflavor.kb.io", "vresourceflavor.kb.io",
	"mworkload.kb.io", "vworkload.kb.io",
}

// namespaced are the webhooks of namespaced objects, which only the
// namespaces labelled cluster.KueueNamespaceLabel get.
var namespaced = []string{TrainJobWebhook, "vtrainjob.kb.io", "mworkload.kb.io", "vworkload.kb.io"}

// Selector is the namespace selector of one of Kueue's webhooks: the
// labelled namespaces for those of namespaced objects, none otherwise.
// Kueue's defaulting adds its entry to every TrainJob it is shown, queue or
// not, so only scenarios that ask for Kueue get it.
func Selector(name string) *metav1.LabelSelector {
	if !slices.Contains(namespaced, name) {
		return nil
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{cluster.KueueNamespaceLabel: "true"}}
	if name == TrainJobWebhook {
		// A namespace with a policy of its own gets its own copy of the
		// TrainJob defaulting webhook (OwnTrainJobWebhook).
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: cluster.KueueReinvocationLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}
	}
	return sel
}

// Narrow keeps, in Kueue's webhook configurations, the webhooks of Webhooks
// only, each with its Selector.
func Narrow(muts []*admissionv1.MutatingWebhookConfiguration, vals []*admissionv1.ValidatingWebhookConfiguration) {
	for _, m := range muts {
		m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionv1.MutatingWebhook) bool { return !slices.Contains(Webhooks, w.Name) })
		for i := range m.Webhooks {
			m.Webhooks[i].NamespaceSelector = Selector(m.Webhooks[i].Name)
		}
	}
	for _, v := range vals {
		v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return !slices.Contains(Webhooks, w.Name) })
		for i := range v.Webhooks {
			v.Webhooks[i].NamespaceSelector = Selector(v.Webhooks[i].Name)
		}
	}
}

// behaviour are the settings of Kueue's Configuration that decide what it
// does, the same on every cluster. Kueue manages the jobs of the namespaces
// labelled cluster.KueueNamespaceLabel only (managedJobsNamespaceSelector),
// as its webhooks see only theirs: the scripted kueue/ scenarios label their
// TrainJobs with queue names of their own, which the real Kueue must leave
// alone. It runs the TrainJob integration only. Of its feature gates,
// VisibilityOnDemand would start an aggregated API server of its own (one a
// process on loopback cannot serve, so none anywhere), and
// DisableWaitForPodsReady turns waitForPodsReady, on by default in
// v1beta2, off as a cluster without it would have it.
func behaviour() map[string]any {
	return map[string]any{
		"manageJobsWithoutQueueName":   false,
		"managedJobsNamespaceSelector": map[string]any{"matchLabels": map[string]any{cluster.KueueNamespaceLabel: "true"}},
		"integrations":                 map[string]any{"frameworks": []any{"trainer.kubeflow.org/trainjob"}},
		"featureGates":                 map[string]any{"VisibilityOnDemand": false, "DisableWaitForPodsReady": true},
	}
}

// Configuration returns Kueue's Configuration (config.kueue.x-k8s.io/v1beta2)
// of serving, the provider's settings of how Kueue is served, with the
// settings of what it does set as on every cluster (they replace serving's:
// the integrations of Kueue's own config/default, say).
func Configuration(serving []byte) ([]byte, error) {
	cfg := map[string]any{}
	if err := yaml.Unmarshal(serving, &cfg); err != nil {
		return nil, fmt.Errorf("failed to read Kueue's configuration: %w", err)
	}
	if cfg["apiVersion"] != "config.kueue.x-k8s.io/v1beta2" || cfg["kind"] != "Configuration" {
		return nil, fmt.Errorf("Kueue's configuration is a %v %v, not a config.kueue.x-k8s.io/v1beta2 Configuration", cfg["apiVersion"], cfg["kind"])
	}
	for k, v := range behaviour() {
		cfg[k] = v
	}
	return yaml.Marshal(cfg)
}

// OwnTrainJobWebhook is cluster.KueueWebhooks' KueueTrainJobWebhook of a
// cluster whose Kueue serves installed (its TrainJob defaulting webhook, as
// the cluster has it, client configuration and CA included): a configuration
// named after Kueue's with the suffix, holding a copy of installed for the
// namespace only, with the reinvocationPolicy policy.
func OwnTrainJobWebhook(installed *admissionv1.MutatingWebhook, namespace, suffix, policy string) *admissionv1.MutatingWebhookConfiguration {
	w := installed.DeepCopy()
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}}
	w.ReinvocationPolicy = ptr.To(admissionv1.ReinvocationPolicyType(policy))
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: TrainJobWebhookConfiguration + "-" + suffix, Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}},
		Webhooks:   []admissionv1.MutatingWebhook{*w},
	}
}

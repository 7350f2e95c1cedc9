package kind

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/internal/kueue"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// objectsOf reads a manifest of fixtures.FS.
func objectsOf(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.ReadObjects(fixtures.FS, file)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// deploymentOf returns the one Deployment of objs, its images.
func deploymentOf(t *testing.T, file string, objs []*unstructured.Unstructured) (client.ObjectKey, []string) {
	t.Helper()
	var key client.ObjectKey
	var images []string
	n := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		n++
		key = client.ObjectKeyFromObject(o)
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			images = append(images, c.(map[string]any)["image"].(string))
		}
	}
	if n != 1 {
		t.Fatalf("%s has %d Deployments, want 1", file, n)
	}
	return key, images
}

// kindAndName names an object of a manifest.
func kindAndName(o *unstructured.Unstructured) string { return o.GetKind() + " " + o.GetName() }

// TestKueueE2ELayout keeps the kueue-e2e layout's manifests the cluster of
// Kueue's own e2e set-up: each controller's Deployment where Kueue's suites
// wait for it, of an image `make kind-images` builds; JobSet in
// jobset-system and not in the Trainer's manifest, which is otherwise the
// Trainer's own install; Kueue managing every namespace with its TrainJob
// integration and every webhook it registers.
func TestKueueE2ELayout(t *testing.T) {
	jobset := objectsOf(t, fixtures.KueueE2EJobSet)
	key, images := deploymentOf(t, fixtures.KueueE2EJobSet, jobset)
	if key != kueueE2EJobSet || !slices.Equal(images, []string{"registry.k8s.io/jobset/jobset:" + releases.JobSetVersion}) {
		t.Errorf("JobSet's Deployment is %s of %v, want %s of registry.k8s.io/jobset/jobset:%s", key, images, kueueE2EJobSet, releases.JobSetVersion)
	}
	for _, o := range jobset {
		if o.GetNamespace() != "" && o.GetNamespace() != kueueE2EJobSet.Namespace {
			t.Errorf("JobSet's %s is in namespace %s, want %s", kindAndName(o), o.GetNamespace(), kueueE2EJobSet.Namespace)
		}
	}

	trainer := objectsOf(t, fixtures.KueueE2ETrainer)
	key, images = deploymentOf(t, fixtures.KueueE2ETrainer, trainer)
	if key != kueueE2ETrainer || !slices.Equal(images, []string{"ghcr.io/kubeflow/trainer/trainer-controller-manager:" + releases.TrainerVersion}) {
		t.Errorf("the Trainer's Deployment is %s of %v, want %s of the Trainer %s", key, images, kueueE2ETrainer, releases.TrainerVersion)
	}
	// The Trainer's own install is the Trainer's objects and JobSet's.
	var without, own []string
	for _, o := range trainer {
		without = append(without, kindAndName(o))
	}
	for _, o := range objectsOf(t, fixtures.TrainerInstall) {
		own = append(own, kindAndName(o))
	}
	var jobsetNames []string
	for _, o := range jobset {
		if o.GetKind() != "Namespace" {
			jobsetNames = append(jobsetNames, kindAndName(o))
		}
	}
	want := slices.DeleteFunc(slices.Clone(own), func(s string) bool { return slices.Contains(jobsetNames, s) })
	slices.Sort(want)
	slices.Sort(without)
	if !slices.Equal(without, want) {
		t.Errorf("the Trainer without JobSet has %v, want the Trainer's own install without JobSet's objects: %v", without, want)
	}

	kueueObjs := objectsOf(t, fixtures.KueueE2EKueue)
	key, images = deploymentOf(t, fixtures.KueueE2EKueue, kueueObjs)
	if key != kubeconfig.KueueDeployment || !slices.Equal(images, []string{kueueImage}) {
		t.Errorf("Kueue's Deployment is %s of %v, want %s of %s", key, images, kubeconfig.KueueDeployment, kueueImage)
	}
	var webhooks int
	for _, o := range kueueObjs {
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == kueueConfigMap:
			data, _, _ := unstructured.NestedString(o.Object, "data", kueueConfigKey)
			var cfg struct {
				ManageJobsWithoutQueueName   *bool `json:"manageJobsWithoutQueueName"`
				ManagedJobsNamespaceSelector any   `json:"managedJobsNamespaceSelector"`
				Integrations                 struct {
					Frameworks []string `json:"frameworks"`
				} `json:"integrations"`
			}
			if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.ManagedJobsNamespaceSelector != nil || cfg.ManageJobsWithoutQueueName != nil {
				t.Errorf("Kueue's e2e configuration narrows what it manages: %s", data)
			}
			if !slices.Contains(cfg.Integrations.Frameworks, "trainer.kubeflow.org/trainjob") {
				t.Errorf("Kueue's e2e configuration has no TrainJob integration: %v", cfg.Integrations.Frameworks)
			}
		case strings.HasSuffix(o.GetKind(), "WebhookConfiguration"):
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			webhooks += len(hooks)
		}
	}
	if webhooks <= len(kueue.Webhooks) {
		t.Errorf("Kueue's e2e manifest registers %d webhooks, want more than the %d every cluster of the trainer layout gets", webhooks, len(kueue.Webhooks))
	}
}

// TestValidateLayout: empty and every layout pass; another is refused with
// the layouts named.
func TestValidateLayout(t *testing.T) {
	for _, l := range append([]string{""}, Layouts...) {
		if err := ValidateLayout(l); err != nil {
			t.Errorf("ValidateLayout(%q) = %v", l, err)
		}
	}
	err := ValidateLayout("kueue")
	if err == nil || !strings.Contains(err.Error(), LayoutKueueE2E) {
		t.Errorf("ValidateLayout(kueue) = %v, want an error naming the layouts", err)
	}
}

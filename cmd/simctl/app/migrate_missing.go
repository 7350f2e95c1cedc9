package app

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// simctl migrate --verify --create-missing: the objects a file's TrainJobs
// and runtimes name but the file does not hold, and, when Pods do not come,
// why.

// reference is an object of the verify namespace that a Pod template names.
type reference struct{ kind, name string }

func (r reference) String() string { return r.kind + " " + r.name }

// referencedObjects returns what the TrainJobs, TrainingRuntimes and
// ClusterTrainingRuntimes of objs name wherever a Pod template can name it
// (serviceAccountName; a volume's persistentVolumeClaim, configMap or
// secret, projected ones too; envFrom and env's configMapRef, secretRef,
// configMapKeyRef, secretKeyRef; imagePullSecrets) and objs do not hold,
// sorted.
func referencedObjects(objs []*unstructured.Unstructured) []reference {
	seen := map[reference]bool{}
	for _, o := range objs {
		switch o.GetKind() {
		case "TrainJob", "TrainingRuntime", "ClusterTrainingRuntime":
			collectReferences(o.Object, seen)
		}
	}
	var out []reference
	for r := range seen {
		if r.name != "" && !holds(objs, r.kind, r.name) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].kind < out[j].kind || out[i].kind == out[j].kind && out[i].name < out[j].name
	})
	return out
}

// collectReferences walks v and adds every object it names to seen.
func collectReferences(v any, seen map[reference]bool) {
	name := func(m any, key string) string {
		mm, _ := m.(map[string]any)
		s, _ := mm[key].(string)
		return s
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			switch k {
			case "serviceAccountName":
				if s, ok := x.(string); ok {
					seen[reference{"ServiceAccount", s}] = true
				}
			case "persistentVolumeClaim":
				seen[reference{"PersistentVolumeClaim", name(x, "claimName")}] = true
			case "configMap", "configMapRef", "configMapKeyRef":
				seen[reference{"ConfigMap", name(x, "name")}] = true
			case "secret":
				seen[reference{"Secret", name(x, "secretName") + name(x, "name")}] = true
			case "secretRef", "secretKeyRef":
				seen[reference{"Secret", name(x, "name")}] = true
			case "imagePullSecrets":
				items, _ := x.([]any)
				for _, item := range items {
					seen[reference{"Secret", name(item, "name")}] = true
				}
			}
			collectReferences(x, seen)
		}
	case []any:
		for _, x := range t {
			collectReferences(x, seen)
		}
	}
}

// createReferenced creates each of refs in ns, empty (a claim of 1Gi,
// ReadWriteOnce, of the default StorageClass).
func createReferenced(ctx context.Context, cl client.Client, ns string, refs []reference) error {
	for _, r := range refs {
		meta := metav1.ObjectMeta{Namespace: ns, Name: r.name}
		var obj client.Object
		switch r.kind {
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{ObjectMeta: meta}
		case "PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}}
		case "ConfigMap":
			obj = &corev1.ConfigMap{ObjectMeta: meta}
		case "Secret":
			obj = &corev1.Secret{ObjectMeta: meta}
		default:
			return fmt.Errorf("cannot create a %s", r.kind)
		}
		if err := cl.Create(ctx, obj); err != nil {
			return fmt.Errorf("--create-missing: failed to create %s: %w", r, err)
		}
	}
	return nil
}

// maxReasons bounds the reasons whyNoPods gives.
const maxReasons = 5

// whyNoPods says why Pods of ns did not come, from its warning events
// (a Job's FailedCreate, a Pod's FailedScheduling), each distinct one once,
// oldest first; "" when there are none. A failed list says so.
func whyNoPods(ctx context.Context, cl client.Client, ns string) string {
	var events corev1.EventList
	if err := cl.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return fmt.Sprintf("the namespace's events could not be read: %v", err)
	}
	items := slices.Clone(events.Items)
	sort.SliceStable(items, func(i, j int) bool { return eventTime(&items[i]).Before(eventTime(&items[j])) })
	var reasons []string
	seen := map[string]bool{}
	for _, e := range items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		line := fmt.Sprintf("%s %s: %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, strings.TrimSpace(e.Message))
		if seen[line] {
			continue
		}
		seen[line] = true
		if len(reasons) == maxReasons {
			reasons = append(reasons, "...")
			break
		}
		reasons = append(reasons, line)
	}
	return strings.Join(reasons, "; ")
}

// eventTime is when an event last happened, by whichever field its
// recorder set.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

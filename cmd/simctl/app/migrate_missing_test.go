package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/sim/manifests"
)

// TestReferencedObjects: every place a Pod template names an object of its
// namespace, in a TrainJob and a runtime, less what the file holds.
func TestReferencedObjects(t *testing.T) {
	objs, err := manifests.Decode([]byte(`
apiVersion: v1
kind: ConfigMap
metadata: {name: held}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: job}
spec:
  podTemplateOverrides:
  - spec:
      serviceAccountName: sa
      imagePullSecrets: [{name: pull}]
      volumes:
      - {name: a, persistentVolumeClaim: {claimName: claim}}
      - {name: b, configMap: {name: held}}
      - {name: c, secret: {secretName: certs}}
      - name: d
        projected: {sources: [{configMap: {name: projected-cm}}, {secret: {name: projected-secret}}]}
      containers:
      - name: node
        envFrom: [{configMapRef: {name: env-cm}}, {secretRef: {name: env-secret}}]
        env:
        - {name: X, valueFrom: {configMapKeyRef: {name: key-cm, key: x}}}
        - {name: Y, valueFrom: {secretKeyRef: {name: key-secret, key: y}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: rt}
spec:
  template:
    spec:
      replicatedJobs:
      - template: {spec: {template: {spec: {serviceAccountName: runtime-sa}}}}
---
apiVersion: v1
kind: Pod
metadata: {name: not-a-trainjob}
spec: {serviceAccountName: ignored}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range referencedObjects(objs) {
		got = append(got, r.String())
	}
	want := []string{
		"ConfigMap env-cm", "ConfigMap key-cm", "ConfigMap projected-cm",
		"PersistentVolumeClaim claim",
		"Secret certs", "Secret env-secret", "Secret key-secret", "Secret projected-secret", "Secret pull",
		"ServiceAccount runtime-sa", "ServiceAccount sa",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("referenced objects (-want +got):\n%s", diff)
	}
	if refs := referencedObjects([]*unstructured.Unstructured{objs[0]}); len(refs) != 0 {
		t.Errorf("a ConfigMap alone names %v, want nothing", refs)
	}
}

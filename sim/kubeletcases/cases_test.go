package kubeletcases

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/scenario"
)

// sources is a namespace with the case's source (without the key), or
// none.
type sources struct{ c Case }

func (s sources) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	if !s.c.Exists || s.c.Secret || name != sourceName {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{otherKey: "x"}}, nil
}

func (s sources) Secret(namespace, name string) (*corev1.Secret, error) {
	if !s.c.Exists || !s.c.Secret || name != sourceName {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{otherKey: []byte("x")}}, nil
}

// simulated is what simctl's simulated kubelet answers for a Pod of c.
func simulated(t *testing.T, c Case) Answer {
	spec := map[string]any{}
	container(spec, "node")
	c.Ref(spec)
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-node-0-0"}}
	if err := json.Unmarshal(data, &pod.Spec); err != nil {
		t.Fatal(err)
	}
	src := sources{c}
	if mounts := kwok.VolumeSetUpErrors(pod, src); len(mounts) > 0 {
		return Answer{Reason: "ContainerCreating", Event: "FailedMount", Message: mounts[0]}
	}
	if failures := kwok.ContainerFailures(pod, src); len(failures) > 0 {
		return Answer{Init: failures[0].Init, Reason: "CreateContainerConfigError", Event: "Failed", Message: "Error: " + failures[0].Message}
	}
	if missing := kwok.MissingPullSecrets(pod, src); len(missing) > 0 {
		return Answer{Runs: true, Event: "FailedToRetrieveImagePullSecret", Message: "Unable to retrieve some image pull secrets (" + strings.Join(missing, ", ") + "); attempting to pull the image may not succeed."}
	}
	return Answer{Runs: true}
}

// TestSimulatedKubeletAnswers: simctl's simulated kubelet answers each
// case as the case says a kubelet does (make test-kubelet checks the
// cases against hollow kubelets, the kubelet's own code).
func TestSimulatedKubeletAnswers(t *testing.T) {
	for _, c := range Cases() {
		got := simulated(t, c)
		match := got.Runs == c.Want.Runs && got.Init == c.Want.Init && got.Reason == c.Want.Reason && got.Event == c.Want.Event &&
			strings.HasPrefix(got.Message, c.Want.Message)
		if !match {
			t.Errorf("%s: the simulated kubelet answers %+v, want %+v", c.Name, got, c.Want)
		}
	}
}

// TestScenariosLint: every case's scenario is one simctl lint accepts, with
// a unique name, and the family is covered: each kind of reference, missing
// and optional.
func TestScenariosLint(t *testing.T) {
	dir := t.TempDir()
	paths, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range paths {
		f, err := scenario.LoadFile(p, scenario.Options{})
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if n := len(f.Scenario.Metadata.Name); n > 56 {
			t.Errorf("%s: a name of %d characters leaves no room for the differential's -hollow suffix (63 at most)", f.Scenario.Metadata.Name, n)
		}
		if names[f.Scenario.Metadata.Name] {
			t.Errorf("two cases are named %s", f.Scenario.Metadata.Name)
		}
		names[f.Scenario.Metadata.Name] = true
	}
	// Which of a refusal and an optional source each kind of reference
	// has cases of: a pull secret is never refused (the kubelet pulls
	// without it) and has no optional form; an init container's env is
	// the same reference as a container's.
	for _, c := range []struct {
		prefix            string
		refused, optional bool
	}{
		{"env-configmap", true, true},
		{"env-secret", true, true},
		{"envfrom-configmap", true, true},
		{"envfrom-secret", true, true},
		{"configmap-volume", true, true},
		{"secret-volume", true, true},
		{"projected-configmap", true, true},
		{"projected-secret", true, true},
		{"init-env", true, false},
		{"pull-secret", false, false},
	} {
		var refused, optional bool
		for _, k := range Cases() {
			if strings.HasPrefix(k.Name, c.prefix) {
				refused = refused || !k.Want.Runs
				optional = optional || strings.HasSuffix(k.Name, "-optional")
			}
		}
		if refused != c.refused || optional != c.optional {
			t.Errorf("the cases of %s: a refusal %t, an optional source %t; want %t, %t", c.prefix, refused, optional, c.refused, c.optional)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(Cases()) {
		t.Errorf("%d files for %d cases", len(entries), len(Cases()))
	}
}

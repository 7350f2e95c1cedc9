package kwok

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func cmKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func secretKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

// TestContainerConfigError: the kubelet's messages (pkg/kubelet/kubelet_pods.go,
// makeEnvironmentVariables) for each source of an environment, envFrom
// before env, and what optional excuses.
func TestContainerConfigError(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want string
	}{
		{"no environment", corev1.Container{}, ""},
		{"a value", corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "x"}}}, ""},
		{"a key of a ConfigMap", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("present", "a", false)}}}, ""},
		{"a missing ConfigMap", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("trainer-env", "a", false)}}}, `configmap "trainer-env" not found`},
		{"a missing optional ConfigMap", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("trainer-env", "a", true)}}}, ""},
		{"a missing key", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("present", "b", false)}}}, `couldn't find key b in ConfigMap ns/present`},
		{"a key only in binaryData", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("present", "bin", false)}}}, `couldn't find key bin in ConfigMap ns/present`},
		{"a missing optional key", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("present", "b", true)}}}, ""},
		{"a missing Secret", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("hf-token", "token", false)}}}, `secret "hf-token" not found`},
		{"a missing Secret key", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("present", "token", false)}}}, `couldn't find key token in Secret ns/present`},
		{"a missing optional Secret", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("hf-token", "token", true)}}}, ""},
		{"envFrom a missing ConfigMap", corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}, `configmap "env" not found`},
		{"envFrom a missing optional Secret", corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Optional: ptr.To(true)}}}}, ""},
		{"envFrom first, then env in order", corev1.Container{
			Env:     []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("first-env", "a", false)}, {Name: "B", ValueFrom: cmKey("second-env", "a", false)}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "from"}}}},
		}, `secret "from" not found`},
		{"env in order", corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("first-env", "a", false)}, {Name: "B", ValueFrom: cmKey("second-env", "a", false)}}}, `secret "first-env" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := ContainerConfigError(pod, &tc.c, sources); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// TestContainerFailures: the first init container that cannot start holds
// every container after it; with the init containers fine, every container
// that cannot start is reported.
func TestContainerFailures(t *testing.T) {
	missing := []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("absent", "a", false)}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init-ok"}, {Name: "init-bad", Env: missing}, {Name: "init-bad-too", Env: missing}},
			Containers:     []corev1.Container{{Name: "node", Env: missing}, {Name: "sidecar"}},
		},
	}
	want := []ContainerFailure{{Init: true, Name: "init-bad", Message: `configmap "absent" not found`}}
	if diff := cmp.Diff(want, ContainerFailures(pod, sources)); diff != "" {
		t.Errorf("with a failing init container (-want +got):\n%s", diff)
	}
	status := configErrorStatus(pod, want, metav1.Now())
	var states []string
	for _, cs := range append(status["initContainerStatuses"].([]corev1.ContainerStatus), status["containerStatuses"].([]corev1.ContainerStatus)...) {
		switch {
		case cs.State.Waiting != nil:
			states = append(states, cs.Name+" waiting "+cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			states = append(states, cs.Name+" terminated "+cs.State.Terminated.Reason)
		}
	}
	if diff := cmp.Diff([]string{"init-ok terminated Completed", "init-bad waiting CreateContainerConfigError", "init-bad-too waiting PodInitializing", "node waiting PodInitializing", "sidecar waiting PodInitializing"}, states); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}

	pod.Spec.InitContainers = pod.Spec.InitContainers[:1]
	want = []ContainerFailure{{Name: "node", Message: `configmap "absent" not found`}}
	if diff := cmp.Diff(want, ContainerFailures(pod, sources)); diff != "" {
		t.Errorf("with the init containers fine (-want +got):\n%s", diff)
	}
	if got := want[0].FieldPath(); got != "spec.containers{node}" {
		t.Errorf("field path %q", got)
	}
	p := pod.DeepCopy()
	p.Status.ContainerStatuses = status["containerStatuses"].([]corev1.ContainerStatus)
	if reported(p, want) {
		t.Error("statuses of another failure are taken for this one")
	}
	p.Status.InitContainerStatuses = nil
	p.Status.ContainerStatuses = configErrorStatus(pod, want, metav1.Now())["containerStatuses"].([]corev1.ContainerStatus)
	if !reported(p, want) {
		t.Error("the statuses configErrorStatus wrote are not taken as reported")
	}
}

// TestMissingPullSecrets: the missing ones, in order, an empty name left out.
func TestMissingPullSecrets(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}, {Name: "present"}, {Name: ""}, {Name: "mirror"}},
	}}
	if diff := cmp.Diff([]string{"registry", "mirror"}, MissingPullSecrets(pod, sources)); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
}

package kwok

// The simulated kubelet's container configs. Before a kubelet creates a
// container it makes the container's environment
// (k8s.io/kubernetes pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables):
// envFrom first, then env in order, each ConfigMap or Secret read from its
// managers. A source that is missing and not optional, or a key a
// configMapKeyRef or secretKeyRef names that its object lacks, fails the
// container's start (pkg/kubelet/kuberuntime/kuberuntime_container.go,
// startContainer): the container waits in CreateContainerConfigError with
// the error as its message, a Warning event Failed says "Error: <message>",
// and a later sync starts it once the source is there. Init containers run
// first, one at a time: one that cannot start holds the ones after it and
// every container.

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sources reads the ConfigMaps and Secrets of a namespace as the kubelet's
// managers do: a missing one is a NotFound error whose message is the
// kubelet's, `configmap "NAME" not found` (client-go's listers and the
// kubelet's watch-based managers both name the resource in the singular).
type Sources interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// ContainerConfigError is the error that keeps a container from being
// created, as the kubelet words it; nil when its environment can be made.
// Only ConfigMap and Secret sources are looked at: the API server refuses
// a fieldRef or resourceFieldRef the kubelet could not resolve.
func ContainerConfigError(pod *corev1.Pod, c *corev1.Container, src Sources) error {
	configMaps := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	configMap := func(name string, optional *bool) (cm *corev1.ConfigMap, skip bool, err error) {
		if cm, ok := configMaps[name]; ok {
			return cm, false, nil
		}
		cm, err = src.ConfigMap(pod.Namespace, name)
		if err != nil {
			return nil, apierrors.IsNotFound(err) && optional != nil && *optional, err
		}
		configMaps[name] = cm
		return cm, false, nil
	}
	secret := func(name string, optional *bool) (s *corev1.Secret, skip bool, err error) {
		if s, ok := secrets[name]; ok {
			return s, false, nil
		}
		s, err = src.Secret(pod.Namespace, name)
		if err != nil {
			return nil, apierrors.IsNotFound(err) && optional != nil && *optional, err
		}
		secrets[name] = s
		return s, false, nil
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			if _, skip, err := configMap(from.ConfigMapRef.Name, from.ConfigMapRef.Optional); err != nil && !skip {
				return err
			}
		case from.SecretRef != nil:
			if _, skip, err := secret(from.SecretRef.Name, from.SecretRef.Optional); err != nil && !skip {
				return err
			}
		}
	}
	for _, env := range c.Env {
		if env.Value != "" || env.ValueFrom == nil {
			continue
		}
		switch ref := env.ValueFrom; {
		case ref.ConfigMapKeyRef != nil:
			r := ref.ConfigMapKeyRef
			cm, skip, err := configMap(r.Name, r.Optional)
			if skip {
				continue
			}
			if err != nil {
				return err
			}
			if _, ok := cm.Data[r.Key]; !ok && !isTrue(r.Optional) {
				return fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", r.Key, pod.Namespace, r.Name)
			}
		case ref.SecretKeyRef != nil:
			r := ref.SecretKeyRef
			s, skip, err := secret(r.Name, r.Optional)
			if skip {
				continue
			}
			if err != nil {
				return err
			}
			if _, ok := s.Data[r.Key]; !ok && !isTrue(r.Optional) {
				return fmt.Errorf("couldn't find key %v in Secret %v/%v", r.Key, pod.Namespace, r.Name)
			}
		}
	}
	return nil
}

// ContainerFailure is a container the kubelet cannot create yet.
type ContainerFailure struct {
	// Init says the container is an init container.
	Init bool
	Name string
	// Message is the kubelet's error.
	Message string
}

// FieldPath is the container's path in the Pod, as its events name it.
func (f ContainerFailure) FieldPath() string {
	if f.Init {
		return fmt.Sprintf("spec.initContainers{%s}", f.Name)
	}
	return fmt.Sprintf("spec.containers{%s}", f.Name)
}

// ContainerFailures returns the containers of a Pod whose volumes are
// mounted that the kubelet cannot create: the first init container that
// cannot start (it holds every container after it), or, when every init
// container can, each container that cannot.
func ContainerFailures(pod *corev1.Pod, src Sources) []ContainerFailure {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if err := ContainerConfigError(pod, c, src); err != nil {
			return []ContainerFailure{{Init: true, Name: c.Name, Message: err.Error()}}
		}
	}
	var out []ContainerFailure
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if err := ContainerConfigError(pod, c, src); err != nil {
			out = append(out, ContainerFailure{Name: c.Name, Message: err.Error()})
		}
	}
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }

// configErrorStatus is what a kubelet reports of a Pod whose sandbox is
// ready and some of whose containers it could not create: those wait in
// CreateContainerConfigError with the message. An init container that
// cannot start leaves the ones before it completed and every container
// after it waiting in PodInitializing. Containers that could start are
// reported waiting in ContainerCreating: the simulated kubelet starts a
// Pod's containers together (a kubelet would run them).
func configErrorStatus(pod *corev1.Pod, failures []ContainerFailure, now metav1.Time) map[string]any {
	failed := map[string]string{}
	initFailed := ""
	for _, f := range failures {
		if f.Init {
			initFailed = f.Name
		}
		failed[f.FieldPath()] = f.Message
	}
	waiting := func(c corev1.Container, reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
	}
	var inits, containers []corev1.ContainerStatus
	var incomplete, unready []string
	reached := initFailed == "" // every init container before the failing one has completed
	for _, c := range pod.Spec.InitContainers {
		switch {
		case c.Name == initFailed:
			inits = append(inits, waiting(c, createContainerConfigError, failed[ContainerFailure{Init: true, Name: c.Name}.FieldPath()]))
			incomplete = append(incomplete, c.Name)
			reached = true
		case (!reached || initFailed == "") && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways:
			// A sidecar: started, and running.
			inits = append(inits, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		case !reached || initFailed == "":
			inits = append(inits, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}})
		default:
			inits = append(inits, waiting(c, "PodInitializing", ""))
			incomplete = append(incomplete, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		unready = append(unready, c.Name)
		switch msg, ok := failed[ContainerFailure{Name: c.Name}.FieldPath()]; {
		case initFailed != "":
			containers = append(containers, waiting(c, "PodInitializing", ""))
		case ok:
			containers = append(containers, waiting(c, createContainerConfigError, msg))
		default:
			containers = append(containers, waiting(c, "ContainerCreating", ""))
		}
	}
	notReady := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	conditions := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: notReady, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: notReady, LastTransitionTime: now},
	}
	if len(incomplete) > 0 {
		conditions[1] = corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")), LastTransitionTime: now}
	}
	status := map[string]any{"conditions": conditions, "containerStatuses": containers, "startTime": now}
	if len(inits) > 0 {
		status["initContainerStatuses"] = inits
	}
	return status
}

// MissingPullSecrets are the Pod's image pull secrets that do not exist
// (k8s.io/kubernetes pkg/kubelet/kubelet_pods.go getPullSecretsForPod): a
// kubelet records a Warning event FailedToRetrieveImagePullSecret naming
// them and pulls the images all the same, so the Pod starts (no image is
// pulled here: one a registry refuses without them is beyond the
// simulation). An entry without a name is left out, as the kubelet does.
func MissingPullSecrets(pod *corev1.Pod, src Sources) []string {
	var out []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		if _, err := src.Secret(pod.Namespace, ref.Name); err != nil {
			out = append(out, ref.Name)
		}
	}
	return out
}

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/policy"
)

// kubeletWrite is the writer of a kubelet step: for each selected Pod, in
// name order, it reads the Pod and patches its status as the Pod's kubelet
// would report the action. The patch carries the resourceVersion it was
// computed from, since it replaces the whole containerStatuses list: a Pod
// that changed in between (the simulated kubelet's own stages) makes it a
// 409 Conflict, the step's result, never retried.
func kubeletWrite(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
	k := st.Kubelet
	ri, _, err := s.resource(a.client, "v1", "Pod", "")
	if err != nil {
		return err
	}
	t := v1alpha1.Target{APIVersion: "v1", Kind: "Pod", Selector: &k.Pods}
	p.target = selectorTarget(&t, s.ns)
	p.target.subresource = "status"
	p.write.PatchType = "strategic"
	p.sent = k
	p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
		return forEach(ctx, ri, &t, func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
			cur, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			var pod corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cur.Object, &pod); err != nil {
				return nil, fmt.Errorf("failed to read Pod %s: %w", name, err)
			}
			patch, err := kubeletPatch(&pod, k, s.clock.Now())
			if err != nil {
				return nil, err
			}
			return ri.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: a.fieldManager}, "status")
		})
	}
	return nil
}

// kubeletPatch is the status patch with which a kubelet reports the action
// on pod at now: the strategic merge patch of pods/status, containers merged
// by name and conditions by type. It refuses a Pod that already finished,
// and a container the Pod does not have.
func kubeletPatch(pod *corev1.Pod, k *v1alpha1.KubeletAction, now time.Time) ([]byte, error) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil, fmt.Errorf("impossible transition: Pod %s is %s, a kubelet does not %s a finished Pod", pod.Name, pod.Status.Phase, k.Action)
	}
	if pod.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("Pod %s is %s: its containers have not started, a kubelet cannot %s them", pod.Name, pod.Status.Phase, k.Action)
	}
	if k.Container != "" && !hasContainerStatus(pod, k.Container) {
		return nil, fmt.Errorf("Pod %s has no container %s", pod.Name, k.Container)
	}
	exitCode, reason := k.ExitCode, k.Reason
	if exitCode == 0 {
		exitCode = 1
	}
	if reason == "" {
		reason = "Error"
	}
	ts := metav1.NewTime(now).Rfc3339Copy()
	// restart: the containers run again; fail on a Pod that may restart
	// them is a restart too, as the kubelet restarts them in place: at once
	// the first time, after the crash-loop back-off afterwards (the
	// container waits in CrashLoopBackOff, and the simulated kubelet's
	// stage pod-back-off-restart restarts it when the back-off is over).
	restart := k.Action == v1alpha1.KubeletRestart || (k.Action == v1alpha1.KubeletFail && pod.Spec.RestartPolicy != corev1.RestartPolicyNever)
	backOffInitial, backOffMax := policy.CrashLoopBackOffOf(pod.Annotations)
	var waiting []string
	// containerStatuses is an atomic list: the patch carries all of them,
	// the ones the action leaves alone as they are.
	statuses := make([]corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i, cs := range pod.Status.ContainerStatuses {
		statuses[i] = *cs.DeepCopy()
		if k.Container != "" && cs.Name != k.Container {
			continue
		}
		startedAt := ts
		if cs.State.Running != nil {
			startedAt = cs.State.Running.StartedAt
		}
		terminated := &corev1.ContainerStateTerminated{StartedAt: startedAt, FinishedAt: ts, ExitCode: exitCode, Reason: reason}
		if k.Action == v1alpha1.KubeletComplete {
			terminated.ExitCode, terminated.Reason = 0, "Completed"
		}
		st := &statuses[i]
		if k.Action == v1alpha1.KubeletFail && restart && cs.RestartCount > 0 {
			backOff := fakegpu.CrashLoopBackOff(cs.RestartCount, backOffInitial, backOffMax)
			st.Ready, st.Started = false, ptr.To(false)
			st.LastTerminationState = corev1.ContainerState{Terminated: terminated}
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fakegpu.CrashLoopBackOffMessage(backOff, cs.Name, pod.Name, pod.Namespace, string(pod.UID)),
			}}
			waiting = append(waiting, cs.Name)
		} else if restart {
			st.Ready, st.Started = true, ptr.To(true)
			st.RestartCount++
			st.LastTerminationState = corev1.ContainerState{Terminated: terminated}
			st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}
		} else {
			st.Ready, st.Started = false, ptr.To(false)
			st.State = corev1.ContainerState{Terminated: terminated}
		}
	}
	body := map[string]any{"containerStatuses": statuses}
	if len(waiting) > 0 {
		message := fmt.Sprintf("containers with unready status: [%s]", strings.Join(waiting, " "))
		body["conditions"] = []map[string]any{
			{"type": corev1.PodReady, "status": corev1.ConditionFalse, "reason": "ContainersNotReady", "message": message, "lastTransitionTime": ts},
			{"type": corev1.ContainersReady, "status": corev1.ConditionFalse, "reason": "ContainersNotReady", "message": message, "lastTransitionTime": ts},
		}
	}
	if !restart {
		phase, condReason := corev1.PodSucceeded, "PodCompleted"
		if k.Action == v1alpha1.KubeletFail {
			phase, condReason = corev1.PodFailed, "PodFailed"
		}
		body["phase"] = phase
		body["conditions"] = []map[string]any{
			{"type": corev1.PodReady, "status": corev1.ConditionFalse, "reason": condReason, "lastTransitionTime": ts},
			{"type": corev1.ContainersReady, "status": corev1.ConditionFalse, "reason": condReason, "lastTransitionTime": ts},
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   body,
	})
}

func hasContainerStatus(pod *corev1.Pod, name string) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return true
		}
	}
	return false
}

package runner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/policy"
)

var (
	kubeletStarted = metav1.Date(2006, 1, 2, 15, 4, 0, 0, time.UTC)
	kubeletNow     = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
)

func runningPod(restartPolicy corev1.RestartPolicy) *corev1.Pod {
	running := corev1.ContainerStatus{Name: "node", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: kubeletStarted}}}
	sidecar := running
	sidecar.Name = "sidecar"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train-node-0-0", ResourceVersion: "42"},
		Spec:       corev1.PodSpec{RestartPolicy: restartPolicy},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{running, sidecar},
		},
	}
}

// applyKubelet applies the step's status patch to pod as the API server
// would (a strategic merge patch of the status) and returns the result.
func applyKubelet(t *testing.T, pod *corev1.Pod, k v1alpha1.KubeletAction) corev1.PodStatus {
	t.Helper()
	patch, err := kubeletPatch(pod, &k, kubeletNow)
	if err != nil {
		t.Fatalf("kubeletPatch: %v", err)
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.Pod{})
	if err != nil {
		t.Fatalf("failed to apply %s: %v", patch, err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got.Status
}

func TestKubeletPatch(t *testing.T) {
	now := metav1.NewTime(kubeletNow)
	terminated := func(code int32, reason string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: kubeletStarted, FinishedAt: now}
	}
	notReady := func(reason string) []corev1.PodCondition {
		return []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: now},
		}
	}
	ended := func(name string, st *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Started: ptr.To(false), State: corev1.ContainerState{Terminated: st}}
	}
	restarted := func(name string, st *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, Started: ptr.To(true), RestartCount: 1, LastTerminationState: corev1.ContainerState{Terminated: st}, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}
	}
	untouched := runningPod(corev1.RestartPolicyNever).Status.ContainerStatuses[1]
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		action v1alpha1.KubeletAction
		want   corev1.PodStatus
	}{{
		name:   "complete",
		policy: corev1.RestartPolicyOnFailure,
		action: v1alpha1.KubeletAction{Action: v1alpha1.KubeletComplete},
		want: corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: notReady("PodCompleted"), ContainerStatuses: []corev1.ContainerStatus{
			ended("node", terminated(0, "Completed")), ended("sidecar", terminated(0, "Completed")),
		}},
	}, {
		name:   "fail with restartPolicy Never ends the Pod",
		policy: corev1.RestartPolicyNever,
		action: v1alpha1.KubeletAction{Action: v1alpha1.KubeletFail, Container: "node", ExitCode: 137, Reason: "OOMKilled"},
		want: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: notReady("PodFailed"), ContainerStatuses: []corev1.ContainerStatus{
			ended("node", terminated(137, "OOMKilled")), untouched,
		}},
	}, {
		name:   "fail with restartPolicy OnFailure restarts in place, exit code 1 and Error by default",
		policy: corev1.RestartPolicyOnFailure,
		action: v1alpha1.KubeletAction{Action: v1alpha1.KubeletFail, Container: "node"},
		want: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, ContainerStatuses: []corev1.ContainerStatus{
			restarted("node", terminated(1, "Error")), untouched,
		}},
	}, {
		name:   "restart",
		policy: corev1.RestartPolicyNever,
		action: v1alpha1.KubeletAction{Action: v1alpha1.KubeletRestart, ExitCode: 2},
		want: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, ContainerStatuses: []corev1.ContainerStatus{
			restarted("node", terminated(2, "Error")), restarted("sidecar", terminated(2, "Error")),
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := applyKubelet(t, runningPod(tc.policy), tc.action)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeletPatchCrashLoop: a container that fails again after a restart
// waits in CrashLoopBackOff for the kubelet's back-off (shortened by the
// Pod's annotations), with the kubelet's message, and the Pod is not Ready.
func TestKubeletPatchCrashLoop(t *testing.T) {
	now := metav1.NewTime(kubeletNow)
	for _, tc := range []struct {
		name         string
		annotations  map[string]string
		restartCount int32
		wantBackOff  string
	}{
		{name: "second failure, kubelet defaults", restartCount: 1, wantBackOff: "10s"},
		{name: "fourth failure, kubelet defaults", restartCount: 3, wantBackOff: "40s"},
		{name: "shortened by the scenario", restartCount: 3, wantBackOff: "3s", annotations: map[string]string{
			policy.LifecycleBackOffInitial: "1", policy.LifecycleBackOffMax: "3",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod(corev1.RestartPolicyOnFailure)
			pod.Namespace, pod.UID, pod.Annotations = "ns", "uid-1", tc.annotations
			pod.Status.ContainerStatuses[0].RestartCount = tc.restartCount
			got := applyKubelet(t, pod, v1alpha1.KubeletAction{Action: v1alpha1.KubeletFail, Container: "node"})
			wantNode := corev1.ContainerStatus{
				Name: "node", Started: ptr.To(false), RestartCount: tc.restartCount,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: kubeletStarted, FinishedAt: now}},
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  "CrashLoopBackOff",
					Message: "back-off " + tc.wantBackOff + " restarting failed container=node pod=train-node-0-0_ns(uid-1)",
				}},
			}
			want := corev1.PodStatus{
				Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [node]", LastTransitionTime: now},
					{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [node]", LastTransitionTime: now},
				},
				ContainerStatuses: []corev1.ContainerStatus{wantNode, runningPod(corev1.RestartPolicyNever).Status.ContainerStatuses[1]},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeletPatchRefuses(t *testing.T) {
	succeeded := runningPod(corev1.RestartPolicyNever)
	succeeded.Status.Phase = corev1.PodSucceeded
	pending := runningPod(corev1.RestartPolicyNever)
	pending.Status.Phase = corev1.PodPending
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		action  v1alpha1.KubeletAction
		wantErr string
	}{
		{"a finished Pod", succeeded, v1alpha1.KubeletAction{Action: v1alpha1.KubeletRestart}, "impossible transition: Pod train-node-0-0 is Succeeded, a kubelet does not restart a finished Pod"},
		{"a Pod not yet running", pending, v1alpha1.KubeletAction{Action: v1alpha1.KubeletComplete}, "Pod train-node-0-0 is Pending: its containers have not started"},
		{"an unknown container", runningPod(corev1.RestartPolicyNever), v1alpha1.KubeletAction{Action: v1alpha1.KubeletFail, Container: "trainer"}, "Pod train-node-0-0 has no container trainer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kubeletPatch(tc.pod, &tc.action, kubeletNow)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("kubeletPatch error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestKubeletPatchIsConditional checks that the patch carries the
// resourceVersion it was computed from, so that a Pod changed since the
// read is a 409 rather than overwritten.
func TestKubeletPatchIsConditional(t *testing.T) {
	patch, err := kubeletPatch(runningPod(corev1.RestartPolicyNever), &v1alpha1.KubeletAction{Action: v1alpha1.KubeletComplete}, kubeletNow)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.ResourceVersion != "42" {
		t.Errorf("patch resourceVersion = %q, want the Pod's 42: %s", got.Metadata.ResourceVersion, patch)
	}
}

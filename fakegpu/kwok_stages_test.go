package fakegpu

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokconsts "sigs.k8s.io/kwok/pkg/consts"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
	"sigs.k8s.io/yaml"
)

// These tests run the embedded Stages through kwok's own stage engine
// (sigs.k8s.io/kwok/pkg/utils/lifecycle, the code the kwok binary runs), so
// that selectors and templates are checked as kwok evaluates them, not as we
// believe it does.

// stageNow stands in for kwok's Now in rendered templates.
var stageNow = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)

// testPodIP stands in for the Pod IP kwok allocates from its CIDR.
const testPodIP = "10.244.0.1"

// stageRenderer renders templates with the functions kwok's Node and Pod
// controllers provide, made deterministic, as kwok's own stage tests do.
func stageRenderer() gotpl.Renderer {
	nodeIPs := func(string) []string { return []string{KwokNodeIP} }
	podIPs := func(nodeName string, hostNetwork bool, uid, name, namespace string) ([]string, error) {
		if hostNetwork {
			return nodeIPs(nodeName), nil
		}
		return []string{testPodIP}, nil
	}
	return gotpl.NewRenderer(gotpl.FuncMap{
		"Now":         func() string { return stageNow.Format(time.RFC3339Nano) },
		"Version":     func() string { return kwokconsts.Version },
		"NodeIP":      func() string { return KwokNodeIP },
		"NodeName":    func() string { return "" },
		"NodePort":    func() int { return 0 },
		"PodIP":       func() string { return testPodIP },
		"NodeIPWith":  func(nodeName string) string { return nodeIPs(nodeName)[0] },
		"NodeIPsWith": nodeIPs,
		"PodIPWith": func(nodeName string, hostNetwork bool, uid, name, namespace string) (string, error) {
			ips, err := podIPs(nodeName, hostNetwork, uid, name, namespace)
			return ips[0], err
		},
		"PodIPsWith": podIPs,
	})
}

// kwokLifecycles returns kwok's stage engine for the embedded Stages, by the
// kind of object they act on.
func kwokLifecycles(t *testing.T) map[string]lifecycle.Lifecycle {
	t.Helper()
	byKind := map[string][]*internalversion.Stage{}
	for _, obj := range mustDecodeKwokConfig(t) {
		s, ok := obj.(*kwokv1alpha1.Stage)
		if !ok {
			continue
		}
		internal, err := internalversion.ConvertToInternalStage(s)
		if err != nil {
			t.Fatalf("failed to convert stage %s: %v", s.Name, err)
		}
		byKind[s.Spec.ResourceRef.Kind] = append(byKind[s.Spec.ResourceRef.Kind], internal)
	}
	out := map[string]lifecycle.Lifecycle{}
	for kind, stages := range byKind {
		lc, err := lifecycle.NewLifecycle(stages)
		if err != nil {
			t.Fatalf("failed to build the %s lifecycle: %v", kind, err)
		}
		if len(lc) != len(stages) {
			t.Fatalf("kwok dropped %d of the %s stages", len(stages)-len(lc), kind)
		}
		out[kind] = lc
	}
	return out
}

// stageObject is a Node or a Pod.
type stageObject interface {
	metav1.Object
	runtime.Object
}

// stageResult is what kwok would do to an object: the stage it picks, the
// delay before, and the steps.
type stageResult struct {
	Stage string       `json:"stage,omitempty"`
	Delay []string     `json:"delay,omitempty"`
	Steps []stepResult `json:"steps,omitempty"`
}

type stepResult struct {
	Kind        string          `json:"kind"`
	Type        string          `json:"type,omitempty"`
	Subresource string          `json:"subresource,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// playStage finds the stage kwok would play for obj and what it would do.
// It fails the test when more than one stage matches, since kwok would then
// pick one at random. A zero stageResult means no stage matches.
func playStage(t *testing.T, lcs map[string]lifecycle.Lifecycle, obj stageObject) stageResult {
	t.Helper()
	ctx := context.Background()
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	lc, ok := lcs[kind]
	if !ok {
		t.Fatalf("no stages for kind %q", kind)
	}
	event := &lifecycle.Event{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Data: obj}
	stages, err := lc.ListAllPossible(ctx, event)
	if err != nil {
		t.Fatalf("failed to match stages: %v", err)
	}
	switch len(stages) {
	case 0:
		return stageResult{}
	case 1:
	default:
		var names []string
		for _, s := range stages {
			names = append(names, s.Name())
		}
		t.Fatalf("stages %v all match %s %s, kwok would pick one at random", names, kind, obj.GetName())
	}
	stage := stages[0]
	res := stageResult{Stage: stage.Name()}
	delays, ok, err := stage.DelayRangePossible(ctx, event, stageNow)
	if err != nil {
		t.Fatalf("failed to compute the delay of stage %s: %v", stage.Name(), err)
	}
	if ok {
		for _, d := range delays {
			res.Delay = append(res.Delay, d.String())
		}
	}
	remain, err := stage.DoSteps(0, obj.GetFinalizers(), obj, stageRenderer(),
		func(e *internalversion.StageEvent) error {
			res.Steps = append(res.Steps, stepResult{Kind: "event", Type: e.Type, Data: mustJSON(t, e)})
			return nil
		},
		func() error {
			res.Steps = append(res.Steps, stepResult{Kind: "delete"})
			return nil
		},
		func(p *lifecycle.Patch) error {
			res.Steps = append(res.Steps, stepResult{Kind: "patch", Type: string(p.Type), Subresource: p.Subresource, Data: p.Data})
			return nil
		},
		func(a *lifecycle.Apply) error {
			res.Steps = append(res.Steps, stepResult{Kind: "apply", Type: string(a.Type), Subresource: a.Subresource, Data: a.Data})
			return nil
		},
	)
	if err != nil || remain >= 0 {
		t.Fatalf("failed to play stage %s (remaining step %d): %v", stage.Name(), remain, err)
	}
	return res
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("failed to marshal %T: %v", v, err)
	}
	return data
}

// TestKwokStagesGolden plays the stages against each object in
// testdata/stages/<case>.input.yaml and compares what kwok would do with
// <case>.output.yaml.
func TestKwokStagesGolden(t *testing.T) {
	lcs := kwokLifecycles(t)
	inputs, err := filepath.Glob(filepath.Join("testdata", "stages", "*.input.yaml"))
	if err != nil {
		t.Fatalf("failed to list inputs: %v", err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/stages/*.input.yaml")
	}
	want := map[string]bool{}
	for _, input := range inputs {
		name := strings.TrimSuffix(filepath.Base(input), ".input.yaml")
		golden := filepath.Join("testdata", "stages", name+".output.yaml")
		want[golden] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(input)
			if err != nil {
				t.Fatalf("failed to read input: %v", err)
			}
			decoded, _, err := yamlSerializer.Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("failed to decode input strictly: %v", err)
			}
			obj, ok := decoded.(stageObject)
			if !ok {
				t.Fatalf("input is a %T, want a Node or a Pod", decoded)
			}
			res := playStage(t, lcs, obj)
			out, err := yaml.Marshal(res)
			if err != nil {
				t.Fatalf("failed to marshal result: %v", err)
			}
			if res.Stage == "" {
				out = append([]byte("# No stage matches: kwok leaves the object as it is.\n"), out...)
			}
			checkGolden(t, golden, out)
		})
	}
	checkNoStaleGolden(t, filepath.Join("testdata", "stages", "*.output.yaml"), want)
}

// applyStage applies the steps of res to obj as the API server would, and
// reports whether obj was deleted.
func applyStage[T stageObject](t *testing.T, obj T, res stageResult) (T, bool) {
	t.Helper()
	for _, step := range res.Steps {
		switch step.Kind {
		case "delete":
			return obj, true
		case "event":
			// Recorded by kwok; the object is unchanged.
		case "patch":
			if step.Type != "application/strategic-merge-patch+json" || step.Subresource != "status" {
				t.Fatalf("stage %s: unexpected %s patch of %q", res.Stage, step.Type, step.Subresource)
			}
			original := mustJSON(t, obj)
			patched, err := strategicpatch.StrategicMergePatch(original, step.Data, obj)
			if err != nil {
				t.Fatalf("stage %s: failed to apply patch: %v", res.Stage, err)
			}
			next := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
			if err := json.Unmarshal(patched, next); err != nil {
				t.Fatalf("stage %s: failed to decode patched object: %v", res.Stage, err)
			}
			obj = next
		default:
			t.Fatalf("stage %s: unexpected step %s", res.Stage, step.Kind)
		}
	}
	return obj, false
}

// runStages plays stages on obj until none matches, the object is deleted,
// or a stage with a delay comes up (kwok would wait for it), and returns the
// stages played and the final object.
func runStages[T stageObject](t *testing.T, lcs map[string]lifecycle.Lifecycle, obj T) ([]string, T, bool, stageResult) {
	t.Helper()
	var played []string
	for range 10 {
		res := playStage(t, lcs, obj)
		if res.Stage == "" || slices.ContainsFunc(res.Delay, func(d string) bool { return d != "0s" }) {
			return played, obj, false, res
		}
		played = append(played, res.Stage)
		var deleted bool
		obj, deleted = applyStage(t, obj, res)
		if deleted {
			return played, obj, true, stageResult{}
		}
	}
	t.Fatalf("stages did not settle after 10 rounds: %v", played)
	return nil, obj, false, stageResult{}
}

func TestKwokNodeLifecycle(t *testing.T) {
	lcs := kwokLifecycles(t)
	nodes, err := NodeGroup{Profile: "nvidia-h100-80gb", Count: 1}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	node := nodes[0]

	played, node, deleted, pending := runStages(t, lcs, node)
	if diff := cmp.Diff([]string{"node-initialize"}, played); diff != "" {
		t.Errorf("stages played on a new node mismatch (-want +got):\n%s", diff)
	}
	if deleted {
		t.Fatal("node was deleted")
	}
	if pending.Stage != "node-heartbeat-with-lease" {
		t.Errorf("next stage for a Ready node = %q, want node-heartbeat-with-lease", pending.Stage)
	}
	if diff := cmp.Diff([]string{"10m0s", "10m10s"}, pending.Delay); diff != "" {
		t.Errorf("heartbeat delay mismatch (-want +got):\n%s", diff)
	}

	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("node is not Ready after node-initialize: %v", node.Status.Conditions)
	}
	if node.Status.Phase != corev1.NodeRunning {
		t.Errorf("node phase = %q, want Running", node.Status.Phase)
	}
	wantAddresses := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: KwokNodeIP},
		{Type: corev1.NodeHostName, Address: node.Name},
	}
	if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
		t.Errorf("node addresses mismatch (-want +got):\n%s", diff)
	}
	p, err := LookupProfile("nvidia-h100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Capacity, node.Status.Capacity); diff != "" {
		t.Errorf("capacity after node-initialize mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(p.Allocatable, node.Status.Allocatable); diff != "" {
		t.Errorf("allocatable after node-initialize mismatch (-want +got):\n%s", diff)
	}
	if got := node.Status.NodeInfo; got.Architecture != "amd64" || got.OperatingSystem != "linux" || got.KubeletVersion != "kwok-"+kwokconsts.Version {
		t.Errorf("node info = %+v", got)
	}

	// The heartbeat keeps the node Ready and does not bring node-initialize
	// back.
	node, _ = applyStage(t, node, pending)
	if res := playStage(t, lcs, node); res.Stage != "node-heartbeat-with-lease" {
		t.Errorf("stage after a heartbeat = %q, want node-heartbeat-with-lease", res.Stage)
	}
	if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
		t.Errorf("node addresses after heartbeat mismatch (-want +got):\n%s", diff)
	}
}

// TestRegisterIsNodeInitialize: a node registered with Register has the
// status kwok's node-initialize stage gives a node created without one,
// for every profile, and kwok then plays only the heartbeat on it.
func TestRegisterIsNodeInitialize(t *testing.T) {
	lcs := kwokLifecycles(t)
	for _, name := range ProfileNames() {
		nodes, err := NodeGroup{Profile: name, Count: 1}.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		registered := nodes[0].DeepCopy()
		Register(registered, stageNow)
		played, initialized, _, _ := runStages(t, lcs, nodes[0])
		if diff := cmp.Diff([]string{"node-initialize"}, played); diff != "" {
			t.Fatalf("%s: stages played on a new node mismatch (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(initialized.Status, registered.Status); diff != "" {
			t.Errorf("%s: registered node's status differs from node-initialize's (-stage +Register):\n%s", name, diff)
		}
		// The kubelet's labels: the beta OS and architecture labels too.
		wantLabels := maps.Clone(nodes[0].Labels)
		wantLabels["beta.kubernetes.io/os"] = wantLabels[corev1.LabelOSStable]
		wantLabels["beta.kubernetes.io/arch"] = wantLabels[corev1.LabelArchStable]
		if diff := cmp.Diff(wantLabels, registered.Labels); diff != "" {
			t.Errorf("%s: registered node's labels mismatch (-want +got):\n%s", name, diff)
		}
		if res := playStage(t, lcs, registered); res.Stage != "node-heartbeat-with-lease" || slices.Contains(res.Delay, "0s") {
			t.Errorf("%s: stage kwok plays on a registered node = %q after %v, want node-heartbeat-with-lease after 10m", name, res.Stage, res.Delay)
		}
	}
}

func TestKwokPodLifecycle(t *testing.T) {
	lcs := kwokLifecycles(t)
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "trainer-node-0-0", Namespace: "default", Finalizers: []string{"batch.kubernetes.io/job-tracking"}},
		Spec: corev1.PodSpec{
			NodeName:   "nvidia-h100-80gb-0",
			Containers: []corev1.Container{{Name: "node", Image: "pytorch/pytorch"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}

	// Bound but its volumes not reported mounted: it waits.
	if res := playStage(t, lcs, pod); res.Stage != "" {
		t.Errorf("stage %q played on a Pod whose volumes are not mounted", res.Stage)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue})

	// Mounted, but a container the kubelet could not create (its
	// environment names a missing ConfigMap): it waits too.
	for _, statuses := range []*[]corev1.ContainerStatus{&pod.Status.ContainerStatuses, &pod.Status.InitContainerStatuses} {
		*statuses = []corev1.ContainerStatus{{Name: "node", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `configmap "env" not found`}}}}
		if res := playStage(t, lcs, pod); res.Stage != "" {
			t.Errorf("stage %q played on a Pod with a container in CreateContainerConfigError", res.Stage)
		}
		*statuses = []corev1.ContainerStatus{{Name: "node", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	}
	pod.Status.InitContainerStatuses = nil

	// Bound and mounted: it becomes Running, and stays so.
	played, pod, deleted, pending := runStages(t, lcs, pod)
	if diff := cmp.Diff([]string{"pod-ready"}, played); diff != "" {
		t.Errorf("stages played on a bound pod mismatch (-want +got):\n%s", diff)
	}
	if deleted || pending.Stage != "" {
		t.Errorf("after pod-ready: deleted %v, next stage %q; want the pod to stay Running", deleted, pending.Stage)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("pod phase = %q, want Running", pod.Status.Phase)
	}
	conditions := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range pod.Status.Conditions {
		conditions[c.Type] = c.Status
	}
	wantConditions := map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodScheduled:              corev1.ConditionTrue,
		corev1.PodReadyToStartContainers: corev1.ConditionTrue,
		corev1.PodInitialized:            corev1.ConditionTrue,
		corev1.PodReady:                  corev1.ConditionTrue,
		corev1.ContainersReady:           corev1.ConditionTrue,
	}
	if diff := cmp.Diff(wantConditions, conditions); diff != "" {
		t.Errorf("pod conditions mismatch (-want +got):\n%s", diff)
	}
	if pod.Status.PodIP != testPodIP || pod.Status.HostIP != KwokNodeIP {
		t.Errorf("pod IPs = %q on host %q, want %q on %q", pod.Status.PodIP, pod.Status.HostIP, testPodIP, KwokNodeIP)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Running == nil || !pod.Status.ContainerStatuses[0].Ready {
		t.Errorf("container statuses = %+v, want one running and ready", pod.Status.ContainerStatuses)
	}

	// Deleted: it stops (Failed), then kwok deletes it; the Job
	// controller's finalizer is left for the Job controller.
	pod.DeletionTimestamp = &metav1.Time{Time: stageNow}
	played, pod, deleted, _ = runStages(t, lcs, pod)
	if diff := cmp.Diff([]string{"pod-terminate", "pod-delete"}, played); diff != "" {
		t.Errorf("stages played on a deleted pod mismatch (-want +got):\n%s", diff)
	}
	if !deleted {
		t.Error("pod was not deleted")
	}
	if pod.Status.Phase != corev1.PodFailed {
		t.Errorf("deleted pod phase = %q, want Failed", pod.Status.Phase)
	}
	if diff := cmp.Diff([]string{"batch.kubernetes.io/job-tracking"}, pod.Finalizers); diff != "" {
		t.Errorf("finalizers mismatch (-want +got):\n%s", diff)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.Ready {
			t.Errorf("container %s of a stopped pod: %+v, want terminated and not ready", cs.Name, cs.State)
		}
	}
	if got := conditionStatus(pod, corev1.PodReady); got != corev1.ConditionFalse {
		t.Errorf("Ready condition of a stopped pod = %q, want False", got)
	}
}

func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// TestCrashLoopBackOffMatchesStage checks that the KWOK stages and
// CrashLoopBackOff agree: for each restart count, with the kubelet's
// defaults and with a scenario's shortened back-off, pod-crash-loop writes
// the back-off CrashLoopBackOff computes into the kubelet's message, and
// pod-back-off-restart waits that long before it restarts the container.
func TestCrashLoopBackOffMatchesStage(t *testing.T) {
	lcs := kwokLifecycles(t)
	for _, tc := range []struct {
		name         string
		annotations  map[string]string
		initial, max time.Duration
		want         []string
	}{
		{name: "kubelet defaults", initial: CrashLoopBackOffInitial, max: CrashLoopBackOffMax,
			want: []string{"10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"}},
		{name: "shortened", annotations: map[string]string{
			"lifecycle.trainersim.dev/back-off-initial-seconds": "1",
			"lifecycle.trainersim.dev/back-off-max-seconds":     "4",
		}, initial: time.Second, max: 4 * time.Second,
			want: []string{"1s", "2s", "4s", "4s", "4s", "4s", "4s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				restartCount := int32(i + 1)
				if got := CrashLoopBackOff(restartCount, tc.initial, tc.max).String(); got != want {
					t.Errorf("CrashLoopBackOff(%d) = %s, want %s", restartCount, got, want)
				}
				annotations := map[string]string{"lifecycle.trainersim.dev/fail-after": "1s"}
				for k, v := range tc.annotations {
					annotations[k] = v
				}
				pod := &corev1.Pod{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Annotations: annotations},
					Spec: corev1.PodSpec{
						NodeName:      "cpu-0",
						RestartPolicy: corev1.RestartPolicyOnFailure,
						Containers:    []corev1.Container{{Name: "node", Image: "pytorch/pytorch"}},
					},
					Status: corev1.PodStatus{
						Phase: corev1.PodRunning,
						ContainerStatuses: []corev1.ContainerStatus{{
							Name: "node", Image: "pytorch/pytorch", Ready: true, RestartCount: restartCount,
							State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(stageNow)}},
						}},
					},
				}
				res := playStage(t, lcs, pod)
				if res.Stage != "pod-crash-loop" {
					t.Fatalf("restartCount %d: stage %q, want pod-crash-loop", restartCount, res.Stage)
				}
				waiting, _ := applyStage(t, pod, res)
				state := waiting.Status.ContainerStatuses[0].State
				if state.Waiting == nil || state.Running != nil {
					t.Fatalf("restartCount %d: state %+v, want waiting", restartCount, state)
				}
				wantMessage := CrashLoopBackOffMessage(CrashLoopBackOff(restartCount, tc.initial, tc.max), "node", "p", "ns", "u")
				if state.Waiting.Reason != "CrashLoopBackOff" || state.Waiting.Message != wantMessage {
					t.Errorf("restartCount %d: waiting %s %q, want CrashLoopBackOff %q", restartCount, state.Waiting.Reason, state.Waiting.Message, wantMessage)
				}
				next := playStage(t, lcs, waiting)
				if next.Stage != "pod-back-off-restart" || !slices.Equal(next.Delay, []string{want}) {
					t.Errorf("restartCount %d: next stage %q after %v, want pod-back-off-restart after %s", restartCount, next.Stage, next.Delay, want)
				}
				restarted, _ := applyStage(t, waiting, next)
				if cs := restarted.Status.ContainerStatuses[0]; cs.RestartCount != restartCount+1 || cs.State.Running == nil || !cs.Ready {
					t.Errorf("restartCount %d: after the back-off %+v, want running and ready with one more restart", restartCount, cs)
				}
			}
		})
	}
	// The first failure restarts at once.
	if got := CrashLoopBackOff(0, CrashLoopBackOffInitial, CrashLoopBackOffMax); got != 0 {
		t.Errorf("CrashLoopBackOff(0) = %s, want 0", got)
	}
}

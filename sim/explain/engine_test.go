package explain

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntime "github.com/kubeflow/trainer/v2/pkg/runtime"

	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/trainerruntime"
)

// clusterKey is the runtimes map key of ClusterTrainingRuntimes.
var clusterKey = jobruntime.RuntimeRefToRuntimeRegistryKey(trainer.RuntimeRef{
	APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)})

// fixture returns the TrainJob of testdata/three-managers.yaml, with a UID as
// on a cluster, and the default runtimes.
func fixture(t *testing.T) (*trainer.TrainJob, []client.Object) {
	t.Helper()
	objs, errs := readObjects("testdata/three-managers.yaml")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tj := objs[0].obj.(*trainer.TrainJob)
	tj.UID = types.UID("6b9e1c9a-0000-4000-8000-000000000001")
	runtimes, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	return tj, runtimes
}

// countingClient is a fake client holding objs that counts the writes that
// reach it.
func countingClient(t *testing.T, writes *atomic.Int32, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme, err := controllers.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	count := func() { writes.Add(1) }
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o apiruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return nil // the fake client's apply needs type converters this test does not set up
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, o, opts...)
		},
	}).Build()
}

// TestWritesNeverReachTheClient shows that the trainer writes while it builds
// a new TrainJob's objects (the runtime snapshot ConfigMap) and that through
// an Engine none of it reaches the client.
func TestWritesNeverReachTheClient(t *testing.T) {
	ctx := context.Background()
	tj, runtimes := fixture(t)

	var direct atomic.Int32
	plain, err := trainerruntime.New(ctx, countingClient(t, &direct, runtimes...), noIndexer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain[clusterKey].NewObjects(ctx, tj.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if direct.Load() == 0 {
		t.Fatal("the trainer wrote nothing while building a new TrainJob: this test no longer shows that explain drops writes")
	}

	var through atomic.Int32
	c := countingClient(t, &through, runtimes...)
	e, err := New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Explain(ctx, tj); err != nil {
		t.Fatal(err)
	}
	if n := through.Load(); n != 0 {
		t.Errorf("%d writes reached the client through the Engine, want 0", n)
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("the client holds %d ConfigMaps after explain, want none", len(cms.Items))
	}
}

// TestRunningJobSetIsRenderedAnyway: for a running TrainJob whose JobSet
// exists the trainer builds no JobSet; explain renders it all the same.
func TestRunningJobSetIsRenderedAnyway(t *testing.T) {
	ctx := context.Background()
	tj, runtimes := fixture(t)
	tj.Spec.Suspend = ptr.To(false)
	running := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: tj.Namespace, Name: tj.Name}, Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(false)}}
	objs := append(runtimes, running)

	var writes atomic.Int32
	plain, err := trainerruntime.New(ctx, countingClient(t, &writes, objs...), noIndexer{})
	if err != nil {
		t.Fatal(err)
	}
	built, err := plain[clusterKey].NewObjects(ctx, tj.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if JobSet(built) != nil {
		t.Fatal("the trainer built a JobSet for a running TrainJob: this test no longer shows that explain hides the JobSet")
	}

	e, err := New(ctx, countingClient(t, &writes, objs...))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Explain(ctx, tj)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.JobSet) == 0 || len(res.Fields) == 0 {
		t.Errorf("explain rendered no JobSet for a running TrainJob: %d fields", len(res.Fields))
	}
}

// TestFinalIsTheTrainersBuild compares explain's final JobSet with the
// JobSet the trainer's runtime builds for the same new TrainJob on a plain
// client.
func TestFinalIsTheTrainersBuild(t *testing.T) {
	ctx := context.Background()
	tj, runtimes := fixture(t)
	var writes atomic.Int32
	plain, err := trainerruntime.New(ctx, countingClient(t, &writes, runtimes...), noIndexer{})
	if err != nil {
		t.Fatal(err)
	}
	built, err := plain[clusterKey].NewObjects(ctx, tj.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want, err := toMap(JobSet(built))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewForObjects(ctx, runtimes...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Explain(ctx, tj)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.JobSet); diff != "" {
		t.Errorf("final JobSet mismatch (-trainer +explain):\n%s", diff)
	}
	// And the entries did reach it: the final tolerations are Kueue's.
	if !strings.Contains(canonical(res.JobSet), `"key":"nvidia.com/gpu"`) {
		t.Errorf("the final JobSet lacks Kueue's toleration:\n%s", canonical(res.JobSet))
	}
}

// TestSnapshotIsRead: a TrainJob's runtime snapshot wins over the runtime,
// as for the trainer, and a snapshot of another object is refused.
func TestSnapshotIsRead(t *testing.T) {
	ctx := context.Background()
	tj, runtimes := fixture(t)
	var snap *trainer.ClusterTrainingRuntime
	for _, r := range runtimes {
		if r.GetName() == tj.Spec.RuntimeRef.Name {
			snap = r.DeepCopyObject().(*trainer.ClusterTrainingRuntime)
		}
	}
	snap.TypeMeta = metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind}
	snap.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "example.com/snapshot:1"
	data, err := yaml.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(uid types.UID) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: tj.Namespace, Name: tj.Name + snapshotSuffix, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: tj.Name, UID: uid, Controller: ptr.To(true)}}},
			Data: map[string]string{snapshotDataKey: string(data)},
		}
	}

	var writes atomic.Int32
	e, err := New(ctx, countingClient(t, &writes, append(runtimes, cm(tj.UID))...))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Explain(ctx, tj)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Runtime.Snapshot, tj.Name+snapshotSuffix; got != want {
		t.Errorf("runtime read from snapshot %q, want %q", got, want)
	}
	runtimeImage := res.Layers[0].PodTemplates[0].Template["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
	if runtimeImage != "example.com/snapshot:1" {
		t.Errorf("layer runtime has image %v, want the snapshot's", runtimeImage)
	}

	e, err = New(ctx, countingClient(t, &writes, append(runtimes, cm("someone-else"))...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Explain(ctx, tj); err == nil || !strings.Contains(err.Error(), "invalid runtime snapshot") {
		t.Errorf("explain with another object's snapshot: error %v, want an invalid runtime snapshot", err)
	}
}

// TestResultJSONRoundTrip checks that the JSON output decodes into a Result.
func TestResultJSONRoundTrip(t *testing.T) {
	ctx := context.Background()
	e, tj, err := FromFiles(ctx, "testdata/three-managers.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Explain(ctx, tj)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := res.Write(&out, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal([]byte(out.String()), &back); err != nil {
		t.Fatal(err)
	}
	if got, want := len(back.Fields), len(res.Fields); got != want {
		t.Errorf("decoded %d fields, want %d", got, want)
	}
	if err := res.Write(&out, "xml"); err == nil {
		t.Error("format xml: no error")
	}
}

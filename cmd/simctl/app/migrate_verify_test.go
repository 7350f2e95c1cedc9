package app

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// renderTestTimeout bounds renderTrainJob's waits in the tests below.
const renderTestTimeout = 300 * time.Millisecond

// fakeTrainJobCluster holds the JobSet of TrainJob "job" (one replicated job
// "node", 2 replicas of parallelism 1) and pods of its Pods; funcs, when
// given, intercept its calls.
func fakeTrainJobCluster(t *testing.T, pods int, funcs ...interceptor.Funcs) client.Client {
	t.Helper()
	scheme := apiruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{&jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
			{Name: "node", Replicas: 2},
		}},
	}}
	for i := range pods {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "job-node-" + strconv.Itoa(i),
			Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "job", jobsetv1alpha2.ReplicatedJobNameKey: "node", jobsetv1alpha2.JobIndexKey: strconv.Itoa(i)},
		}})
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	for _, f := range funcs {
		b = b.WithInterceptorFuncs(f)
	}
	return b.Build()
}

func TestRenderTrainJob(t *testing.T) {
	job, err := renderTrainJob(context.Background(), fakeTrainJobCluster(t, 2), "ns", "job", renderTestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2}, []int{len(job.Templates), len(job.Pods)}); diff != "" {
		t.Errorf("templates and Pods mismatch (-want +got):\n%s", diff)
	}
}

// TestRenderTrainJobNoJobSet: a TrainJob without a JobSet after the wait is
// a failure that says so.
func TestRenderTrainJobNoJobSet(t *testing.T) {
	_, err := renderTrainJob(context.Background(), fakeTrainJobCluster(t, 0), "ns", "other", renderTestTimeout)
	want := "no JobSet for TrainJob other within 300ms"
	if err == nil || !strings.HasPrefix(err.Error(), want+": ") {
		t.Errorf("err = %v, want %s: ...", err, want)
	}
}

// TestRenderTrainJobTooFewPods: a Pod short is a failure with the counts,
// not something left to the diff.
func TestRenderTrainJobTooFewPods(t *testing.T) {
	_, err := renderTrainJob(context.Background(), fakeTrainJobCluster(t, 1), "ns", "job", renderTestTimeout)
	want := "TrainJob job: want 2 Pods, got 1 within 300ms"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// TestRenderTrainJobListFails: a list that fails (as client-go's rate
// limiter fails one near the end of the wait) is tried again, and the
// shortfall is reported with the count of the last list; when no list
// succeeds, the list's error is.
func TestRenderTrainJobListFails(t *testing.T) {
	errList := errors.New("rate: Wait(n=1) would exceed context deadline")
	calls := 0
	failAfterFirst := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		calls++
		if calls > 1 {
			return errList
		}
		return c.List(ctx, list, opts...)
	}}
	_, err := renderTrainJob(context.Background(), fakeTrainJobCluster(t, 1, failAfterFirst), "ns", "job", renderTestTimeout)
	want := "TrainJob job: want 2 Pods, got 1 within 300ms"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}

	alwaysFail := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errList
	}}
	_, err = renderTrainJob(context.Background(), fakeTrainJobCluster(t, 2, alwaysFail), "ns", "job", renderTestTimeout)
	if !errors.Is(err, errList) {
		t.Errorf("err = %v, want %v", err, errList)
	}
}

// TestRenderTrainJobCancelled: the end of the context is returned as such.
func TestRenderTrainJobCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := renderTrainJob(ctx, fakeTrainJobCluster(t, 1), "ns", "job", time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want %v", err, context.Canceled)
	}
}

// TestCompared: what verify says it compared counts what either side has.
func TestCompared(t *testing.T) {
	before := rendered{"a": {Templates: map[string]any{"node": nil}, Pods: map[string]any{"node/0/0": nil, "node/1/0": nil}}}
	after := rendered{
		"a": {Templates: map[string]any{"node": nil, "launcher": nil}, Pods: map[string]any{"node/0/0": nil}},
		"b": {Templates: map[string]any{"node": nil}, Pods: map[string]any{"node/0/0": nil}},
	}
	for _, tc := range []struct {
		name          string
		before, after rendered
		want          string
	}{
		{"same", before, before, "1 Pod template and 2 Pods of 1 TrainJob"},
		{"either side", before, after, "3 Pod templates and 3 Pods of 2 TrainJobs"},
		{"nothing", rendered{}, rendered{}, "0 Pod templates and 0 Pods of 0 TrainJobs"},
	} {
		if got := compared(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: compared = %q, want %q", tc.name, got, tc.want)
		}
	}
}

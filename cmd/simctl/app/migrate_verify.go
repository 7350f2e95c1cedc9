package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/runner"
)

// simctl migrate --verify: the old TrainJob on the last release with
// podTemplateOverrides, the migrated one on the newest release, each on a
// cluster of its own, and what they render compared.

// verifyWait bounds each wait of a verify run: for the JobSet, then for its
// Pods.
const verifyWait = 30 * time.Second

// rendered is what one cluster made of a file's TrainJobs: per TrainJob,
// the Pod template of each replicated job of its JobSet, and the Pods by
// replicated job, Job index and completion index.
type rendered map[string]renderedJob

type renderedJob struct {
	Templates map[string]any
	Pods      map[string]any
}

// verifyMigration runs oldDocs on oldRelease and newDocs on newRelease and
// prints the difference of what they render; a difference is ExitFailed.
// With createMissing, what the TrainJobs name and the documents do not hold
// is created first, on both (referencedObjects).
func verifyMigration(ctx context.Context, out io.Writer, oldDocs, newDocs []byte, oldRelease, newRelease releases.Trainer, createMissing bool) error {
	oldObjs, err := manifests.Decode(oldDocs)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("failed to decode: %w", err))
	}
	newObjs, err := manifests.Decode(newDocs)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("failed to decode the migration: %w", err))
	}
	// One namespace name on both clusters: names derived from it (the
	// Trainer's environment variables, Pod hostnames) are then the same.
	ns := runner.NamespaceName("migrate")
	fmt.Fprintf(out, "verify: the TrainJobs as written on Trainer %s, migrated on Trainer %s, in namespace %s\n", oldRelease.Version, newRelease.Version, ns)
	var missing []reference
	if createMissing {
		if missing = referencedObjects(oldObjs); len(missing) == 0 {
			fmt.Fprintf(out, "verify: --create-missing: FILE holds everything its TrainJobs name; nothing to create\n")
		} else {
			names := make([]string, len(missing))
			for i, r := range missing {
				names[i] = r.String()
			}
			fmt.Fprintf(out, "verify: --create-missing: creating, empty, on both clusters what the TrainJobs name and FILE does not hold: %s\n", strings.Join(names, ", "))
		}
	}
	runtimes := map[string]*unstructured.Unstructured{}
	before, err := renderOn(ctx, out, oldRelease, ns, oldObjs, missing, runtimes, true)
	if err != nil {
		return err
	}
	after, err := renderOn(ctx, out, newRelease, ns, newObjs, missing, runtimes, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "verify: compared %s\n", compared(before, after))
	if diff := cmp.Diff(before, after); diff != "" {
		fmt.Fprintf(out, "verify: what the TrainJobs render differs (-%s +%s):\n%s", oldRelease.Version, newRelease.Version, diff)
		return withCode(ExitFailed, errors.New("the migrated TrainJobs render differently"))
	}
	fmt.Fprintf(out, "verify: the JobSets' Pod templates and the Pods are the same on both releases\n")
	return nil
}

// compared says what a comparison of two renderings covers: the TrainJobs,
// Pod templates (by replicated job) and Pods (by key) of either.
func compared(a, b rendered) string {
	trainJobs := map[string]bool{}
	var templates, pods int
	for _, r := range []rendered{a, b} {
		for name := range r {
			trainJobs[name] = true
		}
	}
	for name := range trainJobs {
		templates += len(unionKeys(a[name].Templates, b[name].Templates))
		pods += len(unionKeys(a[name].Pods, b[name].Pods))
	}
	return fmt.Sprintf("%s and %s of %s", plural(templates, "Pod template"), plural(pods, "Pod"), plural(len(trainJobs), "TrainJob"))
}

// unionKeys returns the keys of a and b.
func unionKeys(a, b map[string]any) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// renderOn starts a cluster of release, creates missing and objs in ns
// (TrainJobs last) and returns what the TrainJobs render. The ClusterTrainingRuntimes the
// TrainJobs name are read from the first cluster (record) into runtimes and
// written over the default ones of the second: both then render from the same
// runtime, and the diff shows the migration, not how the default runtimes
// changed between the releases.
func renderOn(ctx context.Context, out io.Writer, release releases.Trainer, ns string, objs []*unstructured.Unstructured, missing []reference, runtimes map[string]*unstructured.Unstructured, record bool) (_ rendered, err error) {
	c, err := startCluster(ctx, out, sim.ClusterOptions{Trainer: release.Version})
	defer stopCluster(c, &err)
	if err != nil {
		return nil, err
	}
	cl := c.Client()
	if _, err := isolatedNamespace(ctx, c, ns, fakegpu.DefaultNodeGroups()); err != nil {
		return nil, withCode(ExitCluster, err)
	}
	if err := shareRuntimes(ctx, cl, objs, runtimes, record); err != nil {
		return nil, withCode(ExitCluster, err)
	}
	if err := createReferenced(ctx, cl, ns, missing); err != nil {
		return nil, withCode(ExitFailed, fmt.Errorf("on Trainer %s: %w", release.Version, err))
	}
	// Everything but the TrainJobs first, then, once the Trainer sees the
	// runtimes among them, the TrainJobs.
	var trainJobs, runtimesMade []*unstructured.Unstructured
	for _, o := range objs {
		o = o.DeepCopy()
		namespaced, err := cl.IsObjectNamespaced(o)
		if err != nil {
			return nil, withCode(ExitFailed, fmt.Errorf("failed to find the resource of %s %s on Trainer %s's cluster: %w", o.GetKind(), o.GetName(), release.Version, err))
		}
		if namespaced {
			o.SetNamespace(ns)
		}
		if o.GetKind() == "TrainJob" {
			trainJobs = append(trainJobs, o)
			continue
		}
		if err := cl.Create(ctx, o); err != nil {
			return nil, withCode(ExitFailed, fmt.Errorf("Trainer %s refused %s %s: %w", release.Version, o.GetKind(), o.GetName(), err))
		}
		if k := o.GetKind(); k == "TrainingRuntime" || k == "ClusterTrainingRuntime" {
			runtimesMade = append(runtimesMade, o)
		}
	}
	if err := probe.WaitRuntimesSeen(ctx, cl, ns, runtimesMade); err != nil {
		return nil, withCode(ExitCluster, err)
	}
	for _, o := range trainJobs {
		if err := cl.Create(ctx, o); err != nil {
			return nil, withCode(ExitFailed, fmt.Errorf("Trainer %s refused %s %s: %w", release.Version, o.GetKind(), o.GetName(), err))
		}
	}
	r := rendered{}
	for _, o := range objs {
		if o.GetKind() != "TrainJob" {
			continue
		}
		job, err := renderTrainJob(ctx, cl, ns, o.GetName(), verifyWait)
		if err != nil {
			if why := whyNoPods(ctx, cl, ns); why != "" && ctx.Err() == nil {
				err = fmt.Errorf("%w; the namespace's warnings: %s", err, why)
				if len(missing) == 0 && (strings.Contains(why, "not found") || strings.Contains(why, "unbound")) {
					err = fmt.Errorf("%w (--create-missing creates the ServiceAccounts, claims, ConfigMaps and Secrets the TrainJobs name)", err)
				}
			}
			return nil, withCode(ExitFailed, fmt.Errorf("on Trainer %s: %w", release.Version, err))
		}
		r[o.GetName()] = job
	}
	return r, nil
}

// shareRuntimes records the ClusterTrainingRuntimes the TrainJobs of objs
// name that objs do not hold (the cluster's default ones) into runtimes when
// record is set, and writes the recorded ones over this cluster's otherwise.
func shareRuntimes(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured, runtimes map[string]*unstructured.Unstructured, record bool) error {
	for _, o := range objs {
		if o.GetKind() != "TrainJob" {
			continue
		}
		name, _, _ := unstructured.NestedString(o.Object, "spec", "runtimeRef", "name")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "runtimeRef", "kind")
		if name == "" || (kind != "" && kind != "ClusterTrainingRuntime") || holds(objs, "ClusterTrainingRuntime", name) {
			continue
		}
		rt := &unstructured.Unstructured{}
		rt.SetGroupVersionKind(schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "ClusterTrainingRuntime"})
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, rt); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the TrainJob's create says so
			}
			return err
		}
		if record {
			runtimes[name] = rt
			continue
		}
		if from := runtimes[name]; from != nil {
			rt.Object["spec"] = from.Object["spec"]
			if err := cl.Update(ctx, rt); err != nil {
				return fmt.Errorf("failed to give ClusterTrainingRuntime %s the older release's spec: %w", name, err)
			}
		}
	}
	return nil
}

func holds(objs []*unstructured.Unstructured, kind, name string) bool {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return true
		}
	}
	return false
}

// renderTrainJob waits for the TrainJob's JobSet and then for its Pods (as
// many as its replicated jobs ask for), each wait at most timeout, and
// returns their Pod templates and Pods, normalized. Fewer Pods than that is
// an error (Pods that are never created, of a Job the API server refuses
// say, leave nothing to compare), and so is the end of ctx.
func renderTrainJob(ctx context.Context, cl client.Client, ns, name string, timeout time.Duration) (renderedJob, error) {
	js := &jobsetv1alpha2.JobSet{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js)
		return err == nil, client.IgnoreNotFound(err)
	})
	if ctx.Err() != nil {
		return renderedJob{}, ctx.Err()
	}
	if err != nil {
		return renderedJob{}, fmt.Errorf("no JobSet for TrainJob %s within %s: %w", name, timeout, err)
	}
	job := renderedJob{Templates: map[string]any{}, Pods: map[string]any{}}
	want := 0
	for _, rj := range js.Spec.ReplicatedJobs {
		t, err := normalized(rj.Template.Spec.Template.DeepCopy())
		if err != nil {
			return renderedJob{}, fmt.Errorf("replicated job %s of TrainJob %s: %w", rj.Name, name, err)
		}
		job.Templates[rj.Name] = t
		parallelism := int32(1)
		if p := rj.Template.Spec.Parallelism; p != nil {
			parallelism = *p
		}
		want += int(rj.Replicas * parallelism)
	}
	// A failed list is tried again: near the end of the wait client-go's
	// rate limiter fails it ("would exceed context deadline"), and the
	// count of the last list is what to report.
	var pods []corev1.Pod
	var listErr error
	listed := false
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := probe.TrainJobPods(ctx, cl, ns, name)
		if err != nil {
			listErr = err
			return false, nil
		}
		pods, listed = got, true
		return len(pods) >= want, nil
	})
	switch {
	case ctx.Err() != nil:
		return renderedJob{}, ctx.Err()
	case err != nil && !listed && listErr != nil:
		return renderedJob{}, listErr
	case err != nil:
		return renderedJob{}, fmt.Errorf("TrainJob %s: want %d Pods, got %d within %s", name, want, len(pods), timeout)
	}
	for i := range pods {
		p := &pods[i]
		key := strings.Join([]string{
			p.Labels[jobsetv1alpha2.ReplicatedJobNameKey], p.Labels[jobsetv1alpha2.JobIndexKey], p.Labels["batch.kubernetes.io/job-completion-index"],
		}, "/")
		tmpl := &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
		u, err := normalized(tmpl)
		if err != nil {
			return renderedJob{}, fmt.Errorf("Pod %s of TrainJob %s: %w", p.Name, name, err)
		}
		job.Pods[key] = u
	}
	return job, nil
}

// jobSetPriorityLabel is stamped on Pods by JobSet v0.11.1 and v0.12.0
// (seen), not by the v0.10.1 of Trainer v2.1.0.
const jobSetPriorityLabel = "jobset.sigs.k8s.io/priority"

// normalized is a Pod template as unstructured, without what differs from
// one cluster or run to the next whatever the TrainJob says: names and uids
// the servers chose, the node, the ServiceAccount token volume, the
// harness's isolation of the namespace's Pods, and the label only the newer
// JobSets stamp.
func normalized(t *corev1.PodTemplateSpec) (map[string]any, error) {
	t.ObjectMeta = metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}
	for _, k := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", jobsetv1alpha2.JobSetUIDKey, jobSetPriorityLabel} {
		delete(t.Labels, k)
		delete(t.Annotations, k)
	}
	s := &t.Spec
	s.NodeName = ""
	cluster.StripIsolation(s)
	var volumes []corev1.Volume
	for _, v := range s.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			volumes = append(volumes, v)
		}
	}
	s.Volumes = volumes
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			var mounts []corev1.VolumeMount
			for _, m := range cs[i].VolumeMounts {
				if !strings.HasPrefix(m.Name, "kube-api-access-") {
					mounts = append(mounts, m)
				}
			}
			cs[i].VolumeMounts = mounts
		}
	}
	u, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(t)
	if err != nil {
		return nil, fmt.Errorf("failed to convert the Pod template to unstructured: %w", err)
	}
	return u, nil
}

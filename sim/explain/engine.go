package explain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetv1alpha2ac "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/apply"
	jobruntime "github.com/kubeflow/trainer/v2/pkg/runtime"

	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/trainerruntime"
)

// The runtime snapshot ConfigMap, as the trainer names and fills it
// (pkg/runtime/core/snapshot.go).
const (
	snapshotSuffix  = "-runtime-snapshot"
	snapshotDataKey = "runtime"
)

// Engine explains TrainJobs with the trainer's own runtimes. It is safe for
// use by several goroutines.
type Engine struct {
	runtimes map[string]jobruntime.Runtime
	// reader is the client the runtimes were given: reads of the runtime
	// template go through it, like the trainer's.
	reader client.Reader
}

// New builds an Engine whose trainer runtimes read through c, with c's
// writes dropped and JobSets and PodGroups reading as NotFound (see the
// package documentation). c must know the trainer, JobSet and core types.
func New(ctx context.Context, c client.WithWatch) (*Engine, error) {
	ic := interceptor.NewClient(c, interceptor.Funcs{
		Get:               getBuildingAll,
		Create:            dropCreate,
		Update:            dropUpdate,
		Patch:             dropPatch,
		Apply:             dropApply,
		Delete:            dropDelete,
		DeleteAllOf:       dropDeleteAllOf,
		SubResourceCreate: dropSubResourceCreate,
		SubResourceUpdate: dropSubResourceUpdate,
		SubResourcePatch:  dropSubResourcePatch,
		SubResourceApply:  dropSubResourceApply,
	})
	runtimes, err := trainerruntime.New(ctx, ic, noIndexer{})
	if err != nil {
		return nil, err
	}
	return &Engine{runtimes: runtimes, reader: ic}, nil
}

// NewForConfig builds an Engine on a live cluster: a client of cfg with its
// own scheme, wrapped as New describes, so that nothing is written there.
func NewForConfig(ctx context.Context, cfg *rest.Config) (*Engine, error) {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create client: %w", err)
	}
	return New(ctx, c)
}

// NewForObjects builds an Engine without a cluster: the trainer's runtimes
// read from controller-runtime's fake client, which holds objs (runtimes, and
// anything else they should find) in memory. Use it only where no cluster is
// involved; on a cluster, New or NewForConfig read what the trainer reads.
func NewForObjects(ctx context.Context, objs ...client.Object) (*Engine, error) {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return New(ctx, c)
}

// getBuildingAll answers NotFound for JobSets and PodGroups, whose existence
// makes the trainer's builders return nothing for a running TrainJob, and
// passes every other get through.
func getBuildingAll(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err == nil && (gvk.GroupKind() == jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet").GroupKind() || gvk.Kind == "PodGroup") {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	return c.Get(ctx, key, obj, opts...)
}

// The drop* functions stand in for every write: nothing is sent, and the
// caller (the trainer) is told it succeeded.
func dropCreate(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
	return nil
}

func dropUpdate(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
	return nil
}

func dropPatch(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
	return nil
}

func dropApply(context.Context, client.WithWatch, apiruntime.ApplyConfiguration, ...client.ApplyOption) error {
	return nil
}

func dropDelete(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
	return nil
}

func dropDeleteAllOf(context.Context, client.WithWatch, client.Object, ...client.DeleteAllOfOption) error {
	return nil
}

func dropSubResourceCreate(context.Context, client.Client, string, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return nil
}

func dropSubResourceUpdate(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
	return nil
}

func dropSubResourcePatch(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return nil
}

func dropSubResourceApply(context.Context, client.Client, string, apiruntime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return nil
}

// noIndexer accepts every index and builds none: the trainer's runtimes
// register indexes for their watches, which an Engine does not run.
type noIndexer struct{}

// IndexField does nothing.
func (noIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

// runtime returns the trainer runtime of trainJob's runtimeRef.
func (e *Engine) runtime(trainJob *trainer.TrainJob) (jobruntime.Runtime, error) {
	key := jobruntime.RuntimeRefToRuntimeRegistryKey(trainJob.Spec.RuntimeRef)
	r, ok := e.runtimes[key]
	if !ok {
		return nil, fmt.Errorf("unsupported runtime %q of TrainJob %s/%s", key, trainJob.Namespace, trainJob.Name)
	}
	return r, nil
}

// FieldOwner is the field manager the trainer applies its objects with,
// forcing ownership (pkg/controller/trainjob_controller.go,
// reconcileObjects).
const FieldOwner = "trainer"

// Build returns the JobSet apply configuration the trainer builds for
// trainJob now, its NewObjects with every entry: the last layer of Explain,
// alone. Like Explain's, it is rendered whole, as for a new or suspended
// TrainJob (see the package documentation).
func (e *Engine) Build(ctx context.Context, trainJob *trainer.TrainJob) (*jobsetv1alpha2ac.JobSetApplyConfiguration, error) {
	r, err := e.runtime(trainJob)
	if err != nil {
		return nil, err
	}
	objs, err := r.NewObjects(ctx, trainJob.DeepCopy())
	if err != nil {
		return nil, fmt.Errorf("failed to build the objects of TrainJob %s/%s: %w", trainJob.Namespace, trainJob.Name, err)
	}
	js := JobSet(objs)
	if js == nil {
		return nil, fmt.Errorf("TrainJob %s/%s: %w", trainJob.Namespace, trainJob.Name, errNoJobSet)
	}
	return js, nil
}

// JobSet returns the JobSet apply configuration among objs, or nil.
func JobSet(objs []apiruntime.ApplyConfiguration) *jobsetv1alpha2ac.JobSetApplyConfiguration {
	for _, o := range objs {
		if js, ok := o.(*jobsetv1alpha2ac.JobSetApplyConfiguration); ok {
			return js
		}
	}
	return nil
}

// runtimeTemplate reads the runtime's JobSet template the way the trainer's
// NewObjects does: from the TrainJob's runtime snapshot ConfigMap when it
// exists, else from the runtime.
func (e *Engine) runtimeTemplate(ctx context.Context, trainJob *trainer.TrainJob) (RuntimeSource, *trainer.JobSetTemplateSpec, error) {
	kind := ptr.Deref(trainJob.Spec.RuntimeRef.Kind, "")
	src := RuntimeSource{Kind: kind, Name: trainJob.Spec.RuntimeRef.Name}
	var obj client.Object
	var spec *trainer.TrainingRuntimeSpec
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		o := &trainer.ClusterTrainingRuntime{}
		obj, spec = o, &o.Spec
	case trainer.TrainingRuntimeKind:
		o := &trainer.TrainingRuntime{}
		obj, spec = o, &o.Spec
	default:
		return src, nil, fmt.Errorf("unsupported runtime kind %q of TrainJob %s/%s", kind, trainJob.Namespace, trainJob.Name)
	}

	cm := &corev1.ConfigMap{}
	cmName := trainJob.Name + snapshotSuffix
	err := e.reader.Get(ctx, client.ObjectKey{Namespace: trainJob.Namespace, Name: cmName}, cm)
	switch {
	case err == nil:
		if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != trainJob.UID {
			return src, nil, fmt.Errorf("invalid runtime snapshot %s/%s: it belongs to another object", trainJob.Namespace, cmName)
		}
		data, ok := cm.Data[snapshotDataKey]
		if !ok {
			return src, nil, fmt.Errorf("invalid runtime snapshot %s/%s: no %q key", trainJob.Namespace, cmName, snapshotDataKey)
		}
		if err := yaml.Unmarshal([]byte(data), obj); err != nil {
			return src, nil, fmt.Errorf("failed to decode runtime snapshot %s/%s: %w", trainJob.Namespace, cmName, err)
		}
		src.Snapshot = cmName
	case apierrors.IsNotFound(err):
		key := client.ObjectKey{Name: src.Name}
		if kind == trainer.TrainingRuntimeKind {
			key.Namespace = trainJob.Namespace
		}
		if err := e.reader.Get(ctx, key, obj); err != nil {
			return src, nil, fmt.Errorf("failed to get %s %s: %w", kind, src.Name, err)
		}
	default:
		return src, nil, fmt.Errorf("failed to get runtime snapshot %s/%s: %w", trainJob.Namespace, cmName, err)
	}
	return src, &spec.Template, nil
}

// templateApply converts a runtime's JobSet template to the JobSet spec apply
// configuration the trainer starts from (newRuntimeInfo), with the trainer's
// own conversion.
func templateApply(t *trainer.JobSetTemplateSpec) (*jobsetv1alpha2ac.JobSetSpecApplyConfiguration, error) {
	spec, err := apply.FromTypedObjWithFields[jobsetv1alpha2ac.JobSetSpecApplyConfiguration](&jobsetv1alpha2.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"},
		Spec:     t.Spec,
	}, "spec")
	if err != nil {
		return nil, fmt.Errorf("failed to convert the runtime's JobSet template: %w", err)
	}
	return spec, nil
}

// ErrAmbiguous is returned by TrainJob when several namespaces hold a
// TrainJob of the name asked for.
var ErrAmbiguous = errors.New("TrainJobs of that name in several namespaces")

// TrainJob reads a TrainJob through the Engine's client. An empty namespace
// means every namespace: there must be exactly one TrainJob of that name
// (ErrAmbiguous otherwise; a NotFound error of the API when there is none).
func (e *Engine) TrainJob(ctx context.Context, namespace, name string) (*trainer.TrainJob, error) {
	if namespace != "" {
		tj := &trainer.TrainJob{}
		if err := e.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, tj); err != nil {
			return nil, fmt.Errorf("failed to get TrainJob %s/%s: %w", namespace, name, err)
		}
		return tj, nil
	}
	var list trainer.TrainJobList
	if err := e.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("failed to list TrainJobs: %w", err)
	}
	var found []*trainer.TrainJob
	var namespaces []string
	for i := range list.Items {
		if list.Items[i].Name == name {
			found = append(found, &list.Items[i])
			namespaces = append(namespaces, list.Items[i].Namespace)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("failed to find TrainJob %s in any namespace: %w", name,
			apierrors.NewNotFound(schema.GroupResource{Group: trainer.GroupVersion.Group, Resource: "trainjobs"}, name))
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("failed to choose TrainJob %s: %w: %s", name, ErrAmbiguous, strings.Join(namespaces, ", "))
}

// errNoJobSet is returned when the trainer built no JobSet.
var errNoJobSet = errors.New("the trainer built no JobSet")

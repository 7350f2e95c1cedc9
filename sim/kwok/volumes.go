package kwok

// The simulated kubelet's volume manager. KWOK plays a kubelet from stages
// that see only the Pod itself, so it cannot tell whether the ConfigMaps and
// Secrets a Pod's volumes name exist. A kubelet does not start a Pod's
// containers until it has mounted every volume: while a source is missing
// (and not optional) the containers wait in ContainerCreating and the
// kubelet records FailedMount events. Volumes does that part: for each Pod
// bound to a simulated node it looks at the sources, and either reports the
// Pod's sandbox ready (the PodReadyToStartContainers condition, which the
// KWOK stage pod-ready waits for) or reports the missing source as a
// kubelet does, and looks again when a ConfigMap or Secret of the namespace
// appears. It writes as the simulated kubelet (KWOK's identity).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/trainersim/trainersim/fakegpu"
)

// volumesResync is how often the informers list everything again; the
// watches deliver every change in between.
const volumesResync = 10 * time.Minute

// Volumes is the simulated kubelet's volume manager; see the file comment.
type Volumes struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	pods    listersv1.PodLister
	nodes   listersv1.NodeLister
	cms     listersv1.ConfigMapLister
	secrets listersv1.SecretLister
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	log     logr.Logger
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// StartVolumes starts the volume manager with cfg (the simulated kubelet's
// identity) and returns once its caches have synced; log gets every write
// that failed (it is tried again). Stop ends it.
func StartVolumes(ctx context.Context, cfg *rest.Config, log logr.Logger) (*Volumes, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("volume manager: %w", err)
	}
	v := &Volumes{
		client: c,
		log:    log,
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
	v.factory = informers.NewSharedInformerFactory(c, volumesResync)
	podInformer := v.factory.Core().V1().Pods()
	v.pods = podInformer.Lister()
	v.nodes = v.factory.Core().V1().Nodes().Lister()
	v.cms = v.factory.Core().V1().ConfigMaps().Lister()
	v.secrets = v.factory.Core().V1().Secrets().Lister()
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			v.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	// A ConfigMap or Secret that appears may be what a waiting Pod of its
	// namespace lacks.
	sourceAdded := cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		pods, _ := v.pods.Pods(o.GetNamespace()).List(labels.Everything())
		for _, p := range pods {
			if waitsForVolumes(p) {
				enqueue(p)
			}
		}
	}}
	for _, inf := range []cache.SharedIndexInformer{v.factory.Core().V1().ConfigMaps().Informer(), v.factory.Core().V1().Secrets().Informer()} {
		if _, err := inf.AddEventHandler(sourceAdded); err != nil {
			return nil, err
		}
	}
	// A node whose kubelet comes back (a node step's ready) mounts the
	// volumes of the Pods bound to it.
	if _, err := v.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			before, ok1 := old.(*corev1.Node)
			after, ok2 := obj.(*corev1.Node)
			if !ok1 || !ok2 || managed(before) || !managed(after) {
				return
			}
			pods, _ := v.pods.List(labels.Everything())
			for _, p := range pods {
				if p.Spec.NodeName == after.Name && waitsForVolumes(p) {
					enqueue(p)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	// The informers live until Stop; the wait for their caches ends with
	// ctx (the cluster's start), so that an identity that may not list
	// them fails the start instead of hanging it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	v.cancel = cancel
	v.factory.Start(runCtx.Done())
	for typ, ok := range v.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			v.Stop()
			return nil, fmt.Errorf("volume manager: the %v cache did not sync (%v): can its identity list them?", typ, ctx.Err())
		}
	}
	v.done.Go(func() {
		for v.processNext(runCtx) {
		}
	})
	return v, nil
}

// Stop ends the volume manager and waits for it.
func (v *Volumes) Stop() {
	v.cancel()
	v.queue.ShutDown()
	v.done.Wait()
	v.factory.Shutdown()
}

func (v *Volumes) processNext(ctx context.Context) bool {
	key, quit := v.queue.Get()
	if quit {
		return false
	}
	defer v.queue.Done(key)
	if err := v.sync(ctx, key); err != nil && ctx.Err() == nil {
		// A write refused or lost (a Pod changed in between): look again,
		// as the kubelet's sync loop does, and say so in the log.
		v.log.Error(err, "failed to sync the Pod's volumes; trying again", "pod", key.String())
		v.queue.AddRateLimited(key)
		return true
	}
	v.queue.Forget(key)
	return true
}

// waitsForVolumes reports whether a Pod is bound and its sandbox not yet
// reported ready: the volume manager's Pods.
func waitsForVolumes(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

func (v *Volumes) sync(ctx context.Context, key types.NamespacedName) error {
	pod, err := v.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !waitsForVolumes(pod) {
		return nil
	}
	node, err := v.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return err // a node the cache has not seen yet: look again
	}
	if !managed(node) {
		// A real node, whose own kubelet mounts the volumes, or a
		// simulated one whose kubelet is down (a node step's notReady or
		// unreachable).
		return nil
	}
	failures := MissingVolumeSources(pod, v.lookup)
	now := metav1.Now().Rfc3339Copy()
	if len(failures) == 0 {
		return v.patchStatus(ctx, pod, map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now,
		}}})
	}
	if containerCreating(pod) {
		return nil // reported already; a new source makes it look again
	}
	for _, f := range failures {
		if err := v.event(ctx, pod, f, now); err != nil {
			return err
		}
	}
	return v.patchStatus(ctx, pod, waitingStatus(pod, now))
}

// managed reports whether KWOK plays the node's kubelet: the node carries
// both halves of its marker (fakegpu.KwokNodeLabelSelector and
// KwokNodeAnnotation).
func managed(node *corev1.Node) bool {
	return kwokNodes.Matches(labels.Set(node.Labels)) && node.Annotations[fakegpu.KwokNodeAnnotation] == fakegpu.KwokNodeAnnotationValue
}

// kwokNodes selects the labels of the nodes KWOK manages.
var kwokNodes = labels.SelectorFromSet(labels.Set{fakegpu.KwokNodeLabel: fakegpu.KwokNodeLabelValue, fakegpu.ManagedByLabel: fakegpu.ManagedByValue})

// lookup reports whether the ConfigMap ("configmap") or Secret ("secret")
// exists in namespace.
func (v *Volumes) lookup(kind, namespace, name string) bool {
	var err error
	switch kind {
	case "configmap":
		_, err = v.cms.ConfigMaps(namespace).Get(name)
	case "secret":
		_, err = v.secrets.Secrets(namespace).Get(name)
	}
	return err == nil
}

// MissingVolumeSources returns, for each volume of the Pod whose ConfigMap
// or Secret source (direct or projected) does not exist and is not
// optional, the kubelet's FailedMount message:
//
//	MountVolume.SetUp failed for volume "config" : configmap "trainer-config" not found
//
// exists reports whether a "configmap" or "secret" of the namespace exists.
// A PersistentVolumeClaim is not looked at: the scheduler does not bind a
// Pod whose claim is missing or unbound.
func MissingVolumeSources(pod *corev1.Pod, exists func(kind, namespace, name string) bool) []string {
	var messages []string
	missing := func(kind, name string, optional *bool) error {
		if (optional != nil && *optional) || exists(kind, pod.Namespace, name) {
			return nil
		}
		return fmt.Errorf("%s %q not found", kind, name)
	}
	for _, vol := range pod.Spec.Volumes {
		var errs []error
		switch {
		case vol.ConfigMap != nil:
			errs = append(errs, missing("configmap", vol.ConfigMap.Name, vol.ConfigMap.Optional))
		case vol.Secret != nil:
			errs = append(errs, missing("secret", vol.Secret.SecretName, vol.Secret.Optional))
		case vol.Projected != nil:
			for _, s := range vol.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					errs = append(errs, missing("configmap", s.ConfigMap.Name, s.ConfigMap.Optional))
				case s.Secret != nil:
					errs = append(errs, missing("secret", s.Secret.Name, s.Secret.Optional))
				}
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			messages = append(messages, fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", vol.Name, err))
		}
	}
	return messages
}

// containerCreating reports whether the Pod's containers already wait in
// ContainerCreating.
func containerCreating(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating" {
			return true
		}
	}
	return false
}

// waitingStatus is what a kubelet reports of a Pod whose volumes it cannot
// mount: the sandbox not ready, the containers (and init containers)
// waiting.
func waitingStatus(pod *corev1.Pod, now metav1.Time) map[string]any {
	var names []string
	var containers, inits []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
		containers = append(containers, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
	}
	notReady := fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	status := map[string]any{
		"conditions": []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: notReady, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: notReady, LastTransitionTime: now},
		},
		"containerStatuses": containers,
		"startTime":         now,
	}
	if len(inits) > 0 {
		status["initContainerStatuses"] = inits
	}
	return status
}

// patchStatus patches the Pod's status, as of the resourceVersion it was
// read at: a Pod changed in between is a conflict, and the Pod is looked at
// again.
func (v *Volumes) patchStatus(ctx context.Context, pod *corev1.Pod, status map[string]any) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   status,
	})
	if err != nil {
		return err
	}
	_, err = v.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// event records a FailedMount event as the Pod's kubelet does.
func (v *Volumes) event(ctx context.Context, pod *corev1.Pod, message string, now metav1.Time) error {
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason:         "FailedMount",
		Message:        message,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	_, err := v.client.CoreV1().Events(pod.Namespace).Create(ctx, e, metav1.CreateOptions{})
	return err
}

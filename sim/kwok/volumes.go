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
// appears or changes. Once the volumes are mounted it makes each
// container's environment as a kubelet does (containers.go) and reports the
// containers it cannot create. It writes as the simulated kubelet (KWOK's
// identity).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	configmapvolume "k8s.io/kubernetes/pkg/volume/configmap"
	secretvolume "k8s.io/kubernetes/pkg/volume/secret"
	"k8s.io/utils/ptr"

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
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			// As a kubelet's pod config: a change of the Pod's spec or
			// metadata (its binding, its deletion) makes it sync; its
			// status, written by the kubelet itself or by a controller,
			// does not.
			if before, ok := old.(*corev1.Pod); !ok || specOrMetaChanged(before, obj.(*corev1.Pod)) {
				enqueue(obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	// A ConfigMap or Secret that appears, or gains a key, may be what a
	// waiting Pod of its namespace lacks.
	sourceChanged := func(obj any) {
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		pods, _ := v.pods.Pods(o.GetNamespace()).List(labels.Everything())
		for _, p := range pods {
			if waitsForVolumes(p) && configErrors(p) == 0 {
				enqueue(p) // its volumes; a container config is retried as the kubelet does
			}
		}
	}
	sourceAdded := cache.ResourceEventHandlerFuncs{AddFunc: sourceChanged, UpdateFunc: func(_, obj any) { sourceChanged(obj) }}
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
	retry, err := v.sync(ctx, key)
	if err != nil && ctx.Err() == nil {
		// A write refused or lost (a Pod changed in between): look again,
		// as the kubelet's sync loop does, and say so in the log.
		v.log.Error(err, "failed to sync the Pod's volumes; trying again", "pod", key.String())
		v.queue.AddRateLimited(key)
		return true
	}
	v.queue.Forget(key)
	if retry > 0 {
		v.queue.AddAfter(key, retry)
	}
	return true
}

// kubeletBackOffPeriod is how long a kubelet waits before it syncs again a
// Pod whose sync failed (a container it could not create), with a jitter
// of half of it (k8s.io/kubernetes pkg/kubelet/kubelet.go backOffPeriod,
// pkg/kubelet/pod_workers.go completeWork). A ConfigMap or Secret that
// appears does not make it sync sooner.
const kubeletBackOffPeriod = 10 * time.Second

// waitsForVolumes reports whether a Pod is bound and its containers not
// yet started: its sandbox not reported ready (its volumes), or a
// container that could not be created (CreateContainerConfigError). These
// are the volume manager's Pods.
func waitsForVolumes(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
		return false
	}
	if configErrors(p) > 0 {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// sandboxReady reports whether the Pod's PodReadyToStartContainers
// condition is True: its volumes were mounted at an earlier sync.
func sandboxReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// specOrMetaChanged reports whether an update of a Pod changed more than
// its status (k8s.io/kubernetes pkg/kubelet/config/config.go
// checkAndUpdatePod: the spec, labels, annotations, deletion).
func specOrMetaChanged(before, after *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(before.Spec, after.Spec) ||
		!maps.Equal(before.Labels, after.Labels) || !maps.Equal(before.Annotations, after.Annotations) ||
		!equality.Semantic.DeepEqual(before.DeletionTimestamp, after.DeletionTimestamp)
}

// createContainerConfigError is the reason of a container the kubelet
// could not create.
const createContainerConfigError = "CreateContainerConfigError"

// configErrors counts the Pod's containers (init containers included) that
// wait in CreateContainerConfigError.
func configErrors(p *corev1.Pod) int {
	n := 0
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == createContainerConfigError {
			n++
		}
	}
	return n
}

// reported reports whether the Pod's statuses say what failures say: each
// of those containers waits in CreateContainerConfigError with its
// message, and no other does.
func reported(p *corev1.Pod, failures []ContainerFailure) bool {
	if configErrors(p) != len(failures) {
		return false
	}
	for _, f := range failures {
		statuses := p.Status.ContainerStatuses
		if f.Init {
			statuses = p.Status.InitContainerStatuses
		}
		i := slices.IndexFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == f.Name })
		if i < 0 || statuses[i].State.Waiting == nil || statuses[i].State.Waiting.Reason != createContainerConfigError || statuses[i].State.Waiting.Message != f.Message {
			return false
		}
	}
	return true
}

// sync looks at a Pod's volumes and containers and reports what its
// kubelet would; retry is when to look again without a change of the Pod
// (a container it could not create).
func (v *Volumes) sync(ctx context.Context, key types.NamespacedName) (retry time.Duration, err error) {
	pod, err := v.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !waitsForVolumes(pod) {
		return 0, nil
	}
	node, err := v.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return 0, err // a node the cache has not seen yet: look again
	}
	if !managed(node) {
		// A real node, whose own kubelet mounts the volumes, or a
		// simulated one whose kubelet is down (a node step's notReady or
		// unreachable).
		return 0, nil
	}
	now := metav1.Now().Rfc3339Copy()
	if failures := VolumeSetUpErrors(pod, v); len(failures) > 0 {
		if containerCreating(pod) {
			return 0, nil // reported already; a new source makes it look again
		}
		for _, f := range failures {
			if err := v.event(ctx, pod, "", "FailedMount", f, now); err != nil {
				return 0, err
			}
		}
		return 0, v.patchStatus(ctx, pod, waitingStatus(pod, now))
	}
	// The pull secrets are read at the sync that mounted the volumes (and
	// at each later one, which a kubelet counts on the same event): the
	// event is written once that sync's status is, so a status refused
	// and tried again does not write it twice.
	pullSecretsRead := func() error {
		missing := MissingPullSecrets(pod, v)
		if len(missing) == 0 || sandboxReady(pod) {
			return nil
		}
		msg := fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
		return v.event(ctx, pod, "", "FailedToRetrieveImagePullSecret", msg, now)
	}
	containers := ContainerFailures(pod, v)
	if len(containers) == 0 {
		status := map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now,
		}}}
		if configErrors(pod) > 0 {
			// The source came: a kubelet's next sync creates the
			// containers (KWOK's pod-ready stage, which this lets match).
			creating := waitingStatus(pod, now)
			status["containerStatuses"] = creating["containerStatuses"]
			if inits, ok := creating["initContainerStatuses"]; ok {
				status["initContainerStatuses"] = inits
			}
		}
		if err := v.patchStatus(ctx, pod, status); err != nil {
			return 0, err
		}
		return 0, pullSecretsRead()
	}
	retry = wait.Jitter(kubeletBackOffPeriod, 0.5)
	if reported(pod, containers) {
		return retry, nil // the kubelet's event is counted, not written again
	}
	for _, f := range containers {
		if err := v.event(ctx, pod, f.FieldPath(), "Failed", "Error: "+f.Message, now); err != nil {
			return 0, err
		}
	}
	if err := v.patchStatus(ctx, pod, configErrorStatus(pod, containers, now)); err != nil {
		return 0, err
	}
	return retry, pullSecretsRead()
}

// managed reports whether KWOK plays the node's kubelet: the node carries
// both halves of its marker (fakegpu.KwokNodeLabelSelector and
// KwokNodeAnnotation).
func managed(node *corev1.Node) bool {
	return kwokNodes.Matches(labels.Set(node.Labels)) && node.Annotations[fakegpu.KwokNodeAnnotation] == fakegpu.KwokNodeAnnotationValue
}

// kwokNodes selects the labels of the nodes KWOK manages.
var kwokNodes = labels.SelectorFromSet(labels.Set{fakegpu.KwokNodeLabel: fakegpu.KwokNodeLabelValue, fakegpu.ManagedByLabel: fakegpu.ManagedByValue})

// ConfigMap and Secret read the informers' caches: Sources.
func (v *Volumes) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	return v.cms.ConfigMaps(namespace).Get(name)
}

func (v *Volumes) Secret(namespace, name string) (*corev1.Secret, error) {
	return v.secrets.Secrets(namespace).Get(name)
}

// VolumeSetUpErrors returns, for each volume of the Pod the kubelet cannot
// set up, its FailedMount message:
//
//	MountVolume.SetUp failed for volume "config" : configmap "trainer-config" not found
//
// A ConfigMap or Secret source (direct or projected) that is missing and
// not optional fails its volume, as the volume plugins' SetUp does; the
// payload of one that exists (or is optional) is the plugins' own
// MakePayload's (k8s.io/kubernetes pkg/volume/configmap and secret, the
// control plane's release), which fails on an item whose key the object
// lacks ("configmap references non-existent config key: KEY",
// "references non-existent secret key: KEY") unless the source is
// optional. A projected volume names every source that failed. A PersistentVolumeClaim is not looked at: the
// scheduler does not bind a Pod whose claim is missing or unbound.
func VolumeSetUpErrors(pod *corev1.Pod, src Sources) []string {
	var messages []string
	// mode is a volume's defaultMode, which the API server defaults (0644)
	// and MakePayload requires.
	mode := func(m *int32) *int32 { return cmp.Or(m, ptr.To[int32](corev1.ConfigMapVolumeSourceDefaultMode)) }
	configMap := func(name string, items []corev1.KeyToPath, optional *bool, defaultMode *int32) error {
		cm, err := src.ConfigMap(pod.Namespace, name)
		if err != nil {
			if !apierrors.IsNotFound(err) || !isTrue(optional) {
				return err
			}
			cm = &corev1.ConfigMap{}
		}
		_, err = configmapvolume.MakePayload(items, cm, mode(defaultMode), isTrue(optional))
		return err
	}
	secret := func(name string, items []corev1.KeyToPath, optional *bool, defaultMode *int32) error {
		s, err := src.Secret(pod.Namespace, name)
		if err != nil {
			if !apierrors.IsNotFound(err) || !isTrue(optional) {
				return err
			}
			s = &corev1.Secret{}
		}
		_, err = secretvolume.MakePayload(items, s, mode(defaultMode), isTrue(optional))
		return err
	}
	for _, vol := range pod.Spec.Volumes {
		var errs []error
		switch {
		case vol.ConfigMap != nil:
			errs = append(errs, configMap(vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, vol.ConfigMap.DefaultMode))
		case vol.Secret != nil:
			errs = append(errs, secret(vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, vol.Secret.DefaultMode))
		case vol.Projected != nil:
			for _, p := range vol.Projected.Sources {
				switch {
				case p.ConfigMap != nil:
					errs = append(errs, configMap(p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional, vol.Projected.DefaultMode))
				case p.Secret != nil:
					errs = append(errs, secret(p.Secret.Name, p.Secret.Items, p.Secret.Optional, vol.Projected.DefaultMode))
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

// event records a Warning event of the Pod, or of one of its containers
// (fieldPath), as its kubelet does.
func (v *Volumes) event(ctx context.Context, pod *corev1.Pod, fieldPath, reason, message string, now metav1.Time) error {
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath,
		},
		Reason:         reason,
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

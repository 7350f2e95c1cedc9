package kind

// What the kind provider installs into its new cluster: the Trainer and
// JobSet from their own manifests (fixtures.TrainerInstall), the default
// runtimes once the webhooks serve, kwok as a Deployment, the cluster-wide
// isolation policy, and Kueue when the run needs it (kueue.go).

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/policy"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
)

// Named timeouts of the install.
const (
	// deploymentsTimeout bounds the wait for the controllers' Deployments
	// to be Available and their webhooks to serve.
	deploymentsTimeout = 5 * time.Minute
	installPoll        = 250 * time.Millisecond
	// installFieldManager applies the manifests.
	installFieldManager = "simctl"
)

// notOnSimulatedNodes keeps a controller's Pods off trainersim's simulated
// nodes, where no container would ever run: added to the Deployments of the
// installed manifests, the only change made to them.
var notOnSimulatedNodes = corev1.NodeSelectorRequirement{Key: fakegpu.KwokNodeLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{fakegpu.KwokNodeLabelValue}}

type installer struct {
	client   client.Client
	progress *startup.Progress
	// kueue installs Kueue too (kueue.go).
	kueue bool
	// layout is Kind.Layout (layout.go).
	layout string
	// heartbeat is Kind.Heartbeat, KWOK's Lease renewals.
	heartbeat fakegpu.Heartbeat
}

func (in *installer) install(ctx context.Context) error {
	since := in.progress.Now()
	// Pods reach the API server through the kubernetes Service, which
	// works once kube-proxy has written its rules on the node: CoreDNS is
	// Ready only after it has listed through it. Controllers started
	// before exit at once ("dial tcp 10.96.0.1:443: connect: connection
	// refused") and are restarted, which suites that require no restart
	// (JobSet's e2e BeforeSuite) refuse.
	if err := in.waitAvailable(ctx, []client.ObjectKey{{Namespace: metav1.NamespaceSystem, Name: "coredns"}}); err != nil {
		return err
	}
	if in.layout == LayoutKueueE2E {
		if err := in.installKueueE2E(ctx); err != nil {
			return err
		}
	} else {
		deployments, err := in.applyFile(ctx, fixtures.TrainerInstall)
		if err != nil {
			return err
		}
		if in.kueue {
			// Applied once the Trainer's CRDs exist, whose TrainJob
			// integration Kueue sets up at its start; it becomes ready
			// while the rest installs.
			if err := in.applyKueue(ctx); err != nil {
				return err
			}
		}
		if err := in.waitAvailable(ctx, deployments); err != nil {
			return err
		}
	}
	in.progress.Ready(StepInstall, since)

	since = in.progress.Now()
	runtimes, err := manifests.ReadObjects(fixtures.FS, fixtures.RuntimeDir)
	if err != nil {
		return err
	}
	// The webhooks serve once the controllers have made their certificates
	// and put them into the webhook configurations: a server-side dry run
	// through each of them passes.
	var last error
	err = wait.PollUntilContextTimeout(ctx, installPoll, deploymentsTimeout, true, func(ctx context.Context) (bool, error) {
		last = in.client.Create(ctx, runtimes[0].DeepCopy(), client.DryRunAll)
		if apierrors.IsAlreadyExists(last) {
			last = nil
		}
		if last == nil {
			last = in.client.Create(ctx, probeJobSet(), client.DryRunAll)
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the Trainer's and JobSet's webhooks did not serve within %s: %v", deploymentsTimeout, last)
	}
	in.progress.Ready(StepWebhooks, since)

	since = in.progress.Now()
	for _, o := range runtimes {
		if err := in.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	in.progress.Ready(cluster.StepRuntimes, since)

	since = in.progress.Now()
	if err := in.installKwok(ctx); err != nil {
		return err
	}
	in.progress.Ready(cluster.StepKwok, since)

	since = in.progress.Now()
	probe := func(ns *corev1.Namespace) { metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.IsolationKey, ns.Name) }
	if err := policy.ClusterIsolation.Install(ctx, in.client, probe); err != nil {
		return err
	}
	in.progress.Ready(cluster.StepIsolation, since)

	if in.kueue && in.layout != LayoutKueueE2E {
		since = in.progress.Now()
		if err := in.waitKueue(ctx); err != nil {
			return err
		}
		in.progress.Ready(releases.ComponentKueue, since)
	}
	return nil
}

// applyFile applies the manifest file of fixtures.FS, its Namespaces and
// CRDs first as kubectl orders them, each Deployment kept off the simulated
// nodes (avoidSimulatedNodes), and returns its Deployments.
func (in *installer) applyFile(ctx context.Context, file string) ([]client.ObjectKey, error) {
	objs, err := manifests.ReadObjects(fixtures.FS, file)
	if err != nil {
		return nil, err
	}
	var deployments []client.ObjectKey
	list := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := avoidSimulatedNodes(o); err != nil {
				return nil, err
			}
			deployments = append(deployments, client.ObjectKeyFromObject(o))
		}
		list = append(list, o)
	}
	return deployments, in.applyInOrder(ctx, list)
}

// applyInOrder applies objs, their Namespaces and CRDs first, as kubectl
// orders them.
func (in *installer) applyInOrder(ctx context.Context, objs []client.Object) error {
	first := func(o client.Object) bool {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		return kind == "Namespace" || kind == "CustomResourceDefinition"
	}
	for _, pass := range []bool{true, false} {
		for _, o := range objs {
			if first(o) != pass {
				continue
			}
			if err := in.apply(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *installer) apply(ctx context.Context, o client.Object) error {
	//nolint:staticcheck // server-side apply of an unstructured object
	if err := in.client.Patch(ctx, o, client.Apply, client.FieldOwner(installFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	return nil
}

// avoidSimulatedNodes gives a Deployment the node affinity
// notOnSimulatedNodes. The installed manifests set no affinity of their own;
// one that does is refused rather than overwritten.
func avoidSimulatedNodes(u *unstructured.Unstructured) error {
	path := []string{"spec", "template", "spec", "affinity"}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...); found {
		return fmt.Errorf("deployment %s sets an affinity already: the install manifest changed", u.GetName())
	}
	affinity, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{notOnSimulatedNodes},
		}}},
	}})
	if err != nil {
		return err
	}
	return unstructured.SetNestedField(u.Object, affinity, path...)
}

func (in *installer) waitAvailable(ctx context.Context, keys []client.ObjectKey) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, installPoll, deploymentsTimeout, true, func(ctx context.Context) (bool, error) {
		for _, key := range keys {
			d := &appsv1.Deployment{}
			if err := in.client.Get(ctx, key, d); err != nil {
				last = err.Error()
				return false, nil
			}
			if !probe.DeploymentAvailable(d) {
				last = fmt.Sprintf("Deployment %s is not Available", key)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the controllers did not become Available within %s: %s", deploymentsTimeout, last)
	}
	return nil
}

// probeJobSet is the smallest JobSet JobSet's webhooks accept.
func probeJobSet() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": "trainersim-webhook-probe", "namespace": "default"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "probe",
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{map[string]any{"name": "probe", "image": "trainersim.dev/probe:none"}},
			}}}},
		}}},
	}}
	return u
}

// installKwok runs kwok as a Deployment on the cluster's own node, as the
// kubelet of trainersim's simulated nodes, with the same configuration as
// the kwok process of the other providers.
func (in *installer) installKwok(ctx context.Context) error {
	labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue, "app.kubernetes.io/name": kwok.Deployment}
	meta := metav1.ObjectMeta{Name: kwok.Deployment, Namespace: kwok.DeploymentNamespace, Labels: labels}
	sa := &corev1.ServiceAccount{ObjectMeta: meta}
	// kwok writes Nodes, Pods, their status and Leases across the cluster;
	// the cluster is a throwaway one of simctl's.
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwok.Deployment, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kwok.Deployment, Namespace: kwok.DeploymentNamespace}},
	}
	config := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"kwok.yaml": string(fakegpu.KwokConfig())}}
	d := &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: kwok.Deployment,
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{notOnSimulatedNodes}}},
					}}},
					Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers: []corev1.Container{{
						Name:            "kwok",
						Image:           releases.KwokImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            fakegpu.KwokArgs("", "/etc/kwok/kwok.yaml", in.heartbeat),
						Env:             []corev1.EnvVar{{Name: fakegpu.KwokWorkDirEnv, Value: "/var/lib/kwok"}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/kwok"},
							{Name: "work", MountPath: "/var/lib/kwok"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: kwok.Deployment}}}},
						{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	for _, o := range []client.Object{sa, binding, config, d} {
		if err := in.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %T %s: %w", o, o.GetName(), err)
		}
	}
	return in.waitAvailable(ctx, []client.ObjectKey{client.ObjectKeyFromObject(d)})
}

package kwok

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trainersim/trainersim/fakegpu"
)

// TestMissingVolumeSources checks the kubelet's FailedMount messages for
// each kind of source, that an optional source may be missing, and that a
// projected volume names all its missing sources at once.
func TestMissingVolumeSources(t *testing.T) {
	exists := func(kind, namespace, name string) bool {
		return namespace == "ns" && (kind == "configmap" && name == "present" || kind == "secret" && name == "present")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "ok", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "present"}}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "trainer-config"}}}},
			{Name: "maybe", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}},
			{Name: "ssh", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "train-ssh"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "absent"}}},
			{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "present"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
		}},
	}
	want := []string{
		`MountVolume.SetUp failed for volume "config" : configmap "trainer-config" not found`,
		`MountVolume.SetUp failed for volume "ssh" : secret "train-ssh" not found`,
		`MountVolume.SetUp failed for volume "bundle" : [configmap "kube-root-ca.crt" not found, secret "token" not found]`,
	}
	if diff := cmp.Diff(want, MissingVolumeSources(pod, exists)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	pod.Spec.Volumes = pod.Spec.Volumes[:1]
	if got := MissingVolumeSources(pod, exists); len(got) != 0 {
		t.Errorf("a Pod whose sources exist: %v", got)
	}
}

// TestManaged: the volume manager acts for the nodes KWOK plays the kubelet
// of, and neither for a real node nor for a simulated one whose kubelet a
// node step took down (its annotation removed).
func TestManaged(t *testing.T) {
	nodes, err := fakegpu.NodeGroup{Profile: "cpu", Count: 1}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	simulated := nodes[0]
	if !managed(simulated) {
		t.Errorf("a simulated node is not managed: labels %v, annotations %v", simulated.Labels, simulated.Annotations)
	}
	down := simulated.DeepCopy()
	delete(down.Annotations, fakegpu.KwokNodeAnnotation)
	if managed(down) {
		t.Error("a simulated node without KWOK's annotation is managed")
	}
	if managed(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kind-control-plane", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}) {
		t.Error("a real node is managed")
	}
}

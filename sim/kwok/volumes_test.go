package kwok

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/trainersim/trainersim/fakegpu"
)

// fakeSources holds the ConfigMaps and Secrets of namespace ns; a missing
// one is the NotFound error a lister returns.
type fakeSources struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (f fakeSources) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok && namespace == "ns" {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

func (f fakeSources) Secret(namespace, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok && namespace == "ns" {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

// sources has a ConfigMap and a Secret named present, each with key a.
var sources = fakeSources{
	configMaps: map[string]*corev1.ConfigMap{"present": {Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"bin": {0}}}},
	secrets:    map[string]*corev1.Secret{"present": {Data: map[string][]byte{"a": []byte("1")}}},
}

// TestVolumeSetUpErrors checks the kubelet's FailedMount messages for each
// kind of source, that an optional source may be missing, that an item's
// key must be in its object (unless the source is optional), and that a
// projected volume names all its failed sources at once.
func TestVolumeSetUpErrors(t *testing.T) {
	cmVol := func(name, source string, optional bool, keys ...string) corev1.Volume {
		var items []corev1.KeyToPath
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: source}, Items: items, Optional: ptr.To(optional)}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			cmVol("ok", "present", false, "a", "bin"),
			cmVol("config", "trainer-config", false),
			cmVol("maybe", "absent", true, "x"),
			cmVol("items", "present", false, "a", "missing"),
			cmVol("optional-items", "present", true, "missing"),
			{Name: "ssh", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "train-ssh"}}},
			{Name: "secret-items", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "present", Items: []corev1.KeyToPath{{Key: "b", Path: "b"}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "absent"}}},
			{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "present"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "present"}, Items: []corev1.KeyToPath{{Key: "c", Path: "c"}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
		}},
	}
	want := []string{
		`MountVolume.SetUp failed for volume "config" : configmap "trainer-config" not found`,
		`MountVolume.SetUp failed for volume "items" : configmap references non-existent config key: missing`,
		`MountVolume.SetUp failed for volume "ssh" : secret "train-ssh" not found`,
		`MountVolume.SetUp failed for volume "secret-items" : references non-existent secret key: b`,
		`MountVolume.SetUp failed for volume "bundle" : [configmap "kube-root-ca.crt" not found, secret "token" not found, configmap references non-existent config key: c]`,
	}
	if diff := cmp.Diff(want, VolumeSetUpErrors(pod, sources)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	pod.Spec.Volumes = pod.Spec.Volumes[:1]
	if got := VolumeSetUpErrors(pod, sources); len(got) != 0 {
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

package storage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

func claim(modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "data", UID: "1234"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("20Gi"),
			}},
		},
	}
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// volume is the PersistentVolume LocalPath makes for claim() on the node
// of the given hostname label.
func volume(reclaim corev1.PersistentVolumeReclaimPolicy, mode corev1.PersistentVolumeAccessMode, hostname string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1234"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{mode},
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: "/var/local-path-provisioner/pvc-1234_team-a_data",
				Type: ptr.To(corev1.HostPathDirectoryOrCreate),
			}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{hostname},
				}},
			}}}},
		},
	}
}

func TestProvision(t *testing.T) {
	retain := DefaultStorageClass()
	retain.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
	tests := []struct {
		name string
		opts controller.ProvisionOptions
		want *corev1.PersistentVolume
	}{{
		name: "on the selected node, with the claim's size and access modes",
		opts: controller.ProvisionOptions{
			StorageClass: DefaultStorageClass(),
			PVName:       "pvc-1234",
			PVC:          claim(corev1.ReadWriteOnce),
			SelectedNode: node("cpu-0", map[string]string{corev1.LabelHostname: "cpu-0"}),
		},
		want: volume(corev1.PersistentVolumeReclaimDelete, corev1.ReadWriteOnce, "cpu-0"),
	}, {
		name: "the class's reclaim policy; the node's hostname label over its name; ReadWriteOncePod",
		opts: controller.ProvisionOptions{
			StorageClass: retain,
			PVName:       "pvc-1234",
			PVC:          claim(corev1.ReadWriteOncePod),
			SelectedNode: node("node-a", map[string]string{corev1.LabelHostname: "host-a"}),
		},
		want: volume(corev1.PersistentVolumeReclaimRetain, corev1.ReadWriteOncePod, "host-a"),
	}, {
		name: "a node without a hostname label: its name",
		opts: controller.ProvisionOptions{
			StorageClass: DefaultStorageClass(),
			PVName:       "pvc-1234",
			PVC:          claim(corev1.ReadWriteOnce),
			SelectedNode: node("node-b", nil),
		},
		want: volume(corev1.PersistentVolumeReclaimDelete, corev1.ReadWriteOnce, "node-b"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, state, err := LocalPath{}.Provision(context.Background(), tt.opts)
			if err != nil {
				t.Fatalf("Provision: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PersistentVolume mismatch (-want +got):\n%s", diff)
			}
			if state != controller.ProvisioningFinished {
				t.Errorf("state = %s, want %s", state, controller.ProvisioningFinished)
			}
		})
	}
}

func TestProvisionRefuses(t *testing.T) {
	withSelector := claim(corev1.ReadWriteOnce)
	withSelector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	cpu := node("cpu-0", nil)
	tests := []struct {
		name    string
		opts    controller.ProvisionOptions
		wantErr string
	}{
		{"no selected node", controller.ProvisionOptions{StorageClass: DefaultStorageClass(), PVName: "pvc-1", PVC: claim(corev1.ReadWriteOnce)}, ErrNoSelectedNode.Error()},
		{"ReadWriteMany", controller.ProvisionOptions{StorageClass: DefaultStorageClass(), PVName: "pvc-1", PVC: claim(corev1.ReadWriteMany), SelectedNode: cpu}, "access mode ReadWriteMany is not supported"},
		{"a selector", controller.ProvisionOptions{StorageClass: DefaultStorageClass(), PVName: "pvc-1", PVC: withSelector, SelectedNode: cpu}, "claim.Spec.Selector is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, state, err := LocalPath{}.Provision(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Provision error = %v, want one containing %q", err, tt.wantErr)
			}
			if pv != nil {
				t.Errorf("Provision returned a volume with its error: %v", pv.Name)
			}
			// Finished: the library does not expect a volume to appear
			// later, and retries the claim with a backoff.
			if state != controller.ProvisioningFinished {
				t.Errorf("state = %s, want %s", state, controller.ProvisioningFinished)
			}
		})
	}
	if _, _, err := (LocalPath{}).Provision(context.Background(), tests[0].opts); !errors.Is(err, ErrNoSelectedNode) {
		t.Errorf("Provision without a node: %v, want ErrNoSelectedNode", err)
	}
}

func TestDefaultStorageClass(t *testing.T) {
	want := &storagev1.StorageClass{
		TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "standard",
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       "trainersim.dev/local-path",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
	}
	if diff := cmp.Diff(want, DefaultStorageClass()); diff != "" {
		t.Errorf("StorageClass mismatch (-want +got):\n%s", diff)
	}
}

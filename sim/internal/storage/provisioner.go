package storage

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// Names and paths of the default storage.
const (
	// ProvisionerName is the provisioner the default StorageClass names.
	ProvisionerName = "trainersim.dev/local-path"
	// DefaultClassName is the name of the default StorageClass, kind's.
	DefaultClassName = "standard"
	// BasePath is the directory on a node under which every volume's
	// directory is, local-path-provisioner's default.
	BasePath = "/var/local-path-provisioner"
	// hostnameLabel is the node label a volume's node affinity selects.
	hostnameLabel = corev1.LabelHostname
	// DefaultClassAnnotation marks the cluster's default StorageClass,
	// which the DefaultStorageClass admission plugin gives every claim
	// that names none.
	DefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
)

// ErrNoSelectedNode is what Provision returns for a claim without a node
// chosen by the scheduler (volume.kubernetes.io/selected-node): a local
// volume cannot exist before its node is known.
var ErrNoSelectedNode = errors.New("no node was selected for the claim (the StorageClass must bind WaitForFirstConsumer)")

// DefaultStorageClass returns the cluster's default StorageClass, as kind's
// default-storage.yaml declares it but for the provisioner's name.
func DefaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		TypeMeta: metav1.TypeMeta{APIVersion: storagev1.SchemeGroupVersion.String(), Kind: "StorageClass"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultClassName,
			Annotations: map[string]string{DefaultClassAnnotation: "true"},
		},
		Provisioner:       ProvisionerName,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
	}
}

// LocalPath provisions a claim as local-path-provisioner does with its
// default volume type (hostPath) and no shared filesystem: a PersistentVolume
// bound to the claim's selected node by a required node affinity on
// kubernetes.io/hostname, with the directory
// BasePath/<volume>_<namespace>_<claim> created on first use
// (DirectoryOrCreate). It implements the library's Provisioner.
type LocalPath struct{}

var _ controller.Provisioner = LocalPath{}

// Provision returns the PersistentVolume of a claim whose node is chosen.
// Like local-path-provisioner it refuses a claim with a selector, an access
// mode other than ReadWriteOnce or ReadWriteOncePod, or no selected node
// (ErrNoSelectedNode).
func (LocalPath) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	claim := opts.PVC
	if claim.Spec.Selector != nil {
		return nil, controller.ProvisioningFinished, errors.New("claim.Spec.Selector is not supported")
	}
	for _, mode := range claim.Spec.AccessModes {
		if mode != corev1.ReadWriteOnce && mode != corev1.ReadWriteOncePod {
			return nil, controller.ProvisioningFinished, fmt.Errorf("access mode %s is not supported: a local volume supports only ReadWriteOnce and ReadWriteOncePod", mode)
		}
	}
	node := opts.SelectedNode
	if node == nil {
		return nil, controller.ProvisioningFinished, ErrNoSelectedNode
	}
	hostname, ok := node.Labels[hostnameLabel]
	if !ok {
		hostname = node.Name
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass != nil && opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			Capacity: corev1.ResourceList{
				corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage],
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{
					Path: VolumePath(opts.PVName, claim),
					Type: ptr.To(corev1.HostPathDirectoryOrCreate),
				},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{
				Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key:      hostnameLabel,
						Operator: corev1.NodeSelectorOpIn,
						Values:   []string{hostname},
					}},
				}}},
			},
		},
	}, controller.ProvisioningFinished, nil
}

// Delete is called once a volume of the Delete reclaim policy is released.
// local-path-provisioner removes the directory on the node with a helper
// Pod; no container runs here and nothing was created on disk, so there is
// nothing to remove: the library then deletes the PersistentVolume.
func (LocalPath) Delete(context.Context, *corev1.PersistentVolume) error {
	return nil
}

// VolumePath is the directory of a claim's volume on its node,
// local-path-provisioner's BasePath/<volume>_<namespace>_<claim>.
func VolumePath(volume string, claim *corev1.PersistentVolumeClaim) string {
	return path.Join(BasePath, strings.Join([]string{volume, claim.Namespace, claim.Name}, "_"))
}

// Package storage is the envtest cluster's default storage, as kind's is: a
// default StorageClass "standard" with WaitForFirstConsumer binding and a
// provisioner that creates a hostPath PersistentVolume on the node the
// scheduler chose for the claim's first Pod, as rancher's
// local-path-provisioner (rancher.io/local-path) does in a kind cluster.
//
// The provisioner runs in the harness's process on
// sigs.k8s.io/sig-storage-lib-external-provisioner, the library
// local-path-provisioner and the other external provisioners are written
// on: the library watches the claims, and the real kube-controller-manager's
// PersistentVolume binder and kube-scheduler decide when to provision and
// bind, exactly as on a cluster.
//
// What it cannot do: no kubelet and no container runs (KWOK plays the
// kubelet), so nothing is ever created or removed on disk. A volume's path
// is only written into the PersistentVolume; local-path-provisioner's helper
// Pods, which make and remove the directory on the node, have no counterpart
// here. It names itself trainersim.dev/local-path, not rancher.io/local-path,
// so that nobody mistakes it for rancher's.
package storage

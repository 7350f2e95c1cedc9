// Package fakegpu describes the simulated GPU nodes of trainersim and the KWOK
// configuration that keeps them alive.
//
// trainersim runs a real Kubernetes control plane with no kubelet: Kubeflow
// TrainJobs become Pods that the real kube-scheduler binds to Nodes which
// only exist as API objects. Those Nodes have to look like the GPU machines
// the TrainJobs are written for (GPU capacity, GPU Feature Discovery labels,
// the nvidia.com/gpu taint), or the scheduler places Pods where no real
// cluster would, and something has to play the kubelet for them. This
// package provides both halves:
//
//   - Profiles: machine shapes (nvidia-h100-80gb, cpu, ...) kept as embedded
//     YAML under profiles/, so that adding or correcting a machine is a data
//     change, not a code change.
//   - NodeGroup: "N nodes of profile P", turned into *corev1.Node objects
//     carrying the marker that tells KWOK to manage them.
//     ParseNodeGroups reads the command-line form "nvidia-h100-80gb=2,cpu=1".
//   - KwokConfig and KwokArgs: the configuration (embedded kwok/config.yaml)
//     and command line for the kwok binary, which plays the kubelet: it keeps
//     marked Nodes Ready with node leases, moves bound Pods to Running and
//     keeps them there, and lets deleted Pods go away.
//
// Nothing here talks to an API server; the process runner creates the Nodes
// and starts kwok.
package fakegpu

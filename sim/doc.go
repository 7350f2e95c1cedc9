// Package sim gives scenarios a cluster that runs the real Kubeflow Trainer
// and JobSet, with simulated GPU nodes, behind one small interface, Cluster,
// so that the runner, the reports, explain and the ginkgo adapter never know
// which cluster they talk to. Three providers implement it:
//
//   - Environment: a local control plane through controller-runtime's
//     envtest (kube-apiserver, etcd, kube-controller-manager, kube-scheduler
//     built by `make assets`), the Trainer and JobSet compiled into this
//     binary and run in-process, kwok as the simulated kubelet, and kind's
//     default storage (a StorageClass and a local-path provisioner,
//     in-process). One file per component (apiserver.go,
//     controllermanager.go, scheduler.go, kwok.go, controllers.go,
//     provisioner.go, install.go) over the shared process and health-check
//     code of component.go. It starts on a snapshot of the etcd data that
//     every start shares (snapshot.go), built once per binaries, fixtures
//     and versions. The only provider that offers TrainerBuildObserver.
//   - Kubeconfig: any cluster a kubeconfig reaches, checked first
//     (preflight.go), isolated with a MutatingAdmissionPolicy (isolation.go),
//     its simulated nodes played by the cluster's kwok or one of its own
//     (lease.go); Clean removes what a killed run left (clean.go).
//   - Kind: a kind cluster created with sigs.k8s.io/kind's Go API, the
//     Trainer and JobSet installed as Deployments from their manifests
//     (kindinstall.go), then used as a Kubeconfig.
//
// What it cannot do: no container ever runs (kwok reports Pods Running),
// so nothing is written to a volume's directory; a kind cluster has one
// node and runs only images built on this machine or pulled where a
// registry is reachable. NewCluster picks a provider from ClusterOptions, as simctl's
// flags and the ginkgo adapter's environment do.
package sim

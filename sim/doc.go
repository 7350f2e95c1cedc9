// Package sim is the front door for programs that want a cluster to run
// scenarios on: NewCluster turns ClusterOptions (what simctl's flags and
// the ginkgo adapter's environment say) into a cluster.Cluster of one of
// the three providers, so that nothing else needs to know which one runs.
//
// The house behind it:
//
//   - sim/cluster: the seam. The Cluster interface and the capabilities a
//     provider may add (cluster.go); the labels and the isolation every
//     provider gives a scenario's objects (labels.go).
//   - sim/providers/envtest: a local control plane through
//     controller-runtime's envtest, the Trainer and JobSet in this process
//     (or as processes, for another release), KWOK as the kubelet.
//   - sim/providers/kubeconfig: any cluster a kubeconfig reaches, checked
//     first, isolated with a MutatingAdmissionPolicy.
//   - sim/providers/kind: a kind cluster created with sigs.k8s.io/kind's Go
//     API, the Trainer and JobSet installed as Deployments, then used as a
//     kubeconfig cluster.
//   - below them: sim/kwok (KWOK, its lease, the simulated nodes),
//     sim/policy (isolation and Pod lifecycles), sim/webhooks (scenario
//     webhooks), sim/probe (what a scenario asks a running cluster),
//     sim/manifests, sim/releases (the pinned versions), and
//     sim/internal/{assets,startup}.
//
// What it cannot do: no container ever runs (kwok reports Pods Running),
// so nothing is written to a volume's directory; a kind cluster has one
// node and runs only images built on this machine or pulled where a
// registry is reachable.
package sim

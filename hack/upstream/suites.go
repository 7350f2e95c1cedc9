package main

import "regexp"

// suite is one upstream project's e2e suite as make test-upstream runs it:
// built from the module cache at the version this repository pins, run
// unchanged against a cluster `simctl up` starts.
type suite struct {
	// Name is how the figures name it: "trainer", "jobset", "kueue".
	Name string
	// Title is the project, and the suite's path in it.
	Title string
	// Module is the Go module the suite belongs to.
	Module string
	// PinDir is the directory (of this repository) whose go.mod pins the
	// module's version: the main module, or a nested one under hack/.
	PinDir string
	// Package is the suite's package in the module.
	Package string
	// LabelFilter, when set, runs only the specs it matches (ginkgo's
	// --label-filter), as the project's own e2e target filters them.
	LabelFilter string
	// Up are simctl up's flags for the suite's cluster.
	Up []string
	// Env are variables the suite reads (NAME=value).
	Env []string
	// TaintRealNodes taints the cluster's real nodes (kind's one node)
	// node-role.kubernetes.io/control-plane:NoSchedule, as kubeadm taints a
	// control-plane node, so that the suite's Pods go to the simulated
	// nodes: kind takes the taint off a cluster of one node, and images
	// cannot be pulled here.
	TaintRealNodes bool
	// Setup are manifests of the module (paths in it) applied to the cluster
	// before the suite runs, as the project's own e2e set-up applies them.
	Setup []string
	// CannotRun are the specs that cannot run here, with the reason: they
	// are not run, and the figures list them.
	CannotRun []cannotRun
}

// cannotRun is a spec that needs what no simulated node has.
type cannotRun struct {
	// Spec matches the spec's full text (its containers' texts and its own,
	// joined by spaces).
	Spec *regexp.Regexp
	// Reason says what it needs that the harness cannot give.
	Reason string
}

// noContainer is the reason of specs whose containers must really run.
const noContainer = "no container runs on a simulated node"

// suites are the three upstream suites, in the order they run.
var suites = []suite{
	{
		Name:    "trainer",
		Title:   "Kubeflow Trainer e2e (test/e2e)",
		Module:  "github.com/kubeflow/trainer/v2",
		PinDir:  ".",
		Package: "./test/e2e",
		// The runtimes' jobs must start and complete as on a cluster: a
		// Pod is Pending for 5s (its image pull; the specs check that a
		// job is active and not yet ready), then runs 20s and succeeds.
		// 20s also keeps the Pods of the DeadlineExceeded spec running
		// past its 10s activeDeadlineSeconds.
		Up: []string{"--nodes", "cpu=4", "--pods-start-after", "5s", "--pods-succeed-after", "20s"},
		// hack/e2e-setup-cluster.sh installs the Flux runtime for its spec.
		Setup: []string{"examples/flux/flux-runtime.yaml"},
		CannotRun: []cannotRun{{
			Spec:   regexp.MustCompile(`runtime status server instrumentation`),
			Reason: noContainer + ": its container runs a Python script that calls the Trainer's runtime status endpoint",
		}},
	}, {
		Name:    "jobset",
		Title:   "JobSet e2e (test/e2e)",
		Module:  "sigs.k8s.io/jobset",
		PinDir:  ".",
		Package: "./test/e2e",
		// Its BeforeSuite waits for the jobset-controller-manager
		// Deployment: kind has it, from the Trainer's manifests, in
		// kubeflow-system.
		Up:             []string{"--cluster", "kind", "--nodes", "cpu=4", "--pods-start-after", "5s", "--pods-succeed-after", "20s"},
		Env:            []string{"NAMESPACE=kubeflow-system"},
		TaintRealNodes: true,
		CannotRun: []cannotRun{{
			Spec:   regexp.MustCompile(`should enable pods to ping each other via hostname`),
			Reason: noContainer + ": its Pods ping each other by their DNS names until every one answers",
		}, {
			Spec:   regexp.MustCompile(`should recover by recreating all jobs and succeeding eventually`),
			Reason: noContainer + ": its container fails on the first attempt and succeeds on the next, deciding by itself",
		}},
	}, {
		Name:    "kueue",
		Title:   "Kueue TrainJob e2e (test/e2e/singlecluster/extended, feature:trainjob)",
		Module:  "sigs.k8s.io/kueue",
		PinDir:  "hack/kueue/v0.19.1",
		Package: "./test/e2e/singlecluster/extended",
		// Kueue's Makefile runs the TrainJob specs with
		// GINKGO_ARGS=--label-filter=feature:trainjob make test-e2e-extended;
		// its BeforeSuite waits for the controllers the filter needs.
		LabelFilter: "feature:trainjob",
		// Its BeforeSuite waits for Kueue, JobSet in jobset-system and the
		// Trainer as Deployments, and its specs create TrainJobs in
		// namespaces of their own, which Kueue manages: the cluster of
		// Kueue's own e2e set-up, the kueue-e2e layout. One spec waits for
		// its TrainJob to complete (its container exits at once).
		Up:             []string{"--cluster", "kind", "--layout", "kueue-e2e", "--nodes", "cpu=4", "--pods-start-after", "5s", "--pods-succeed-after", "20s"},
		TaintRealNodes: true,
	},
}

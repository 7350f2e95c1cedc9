// Package trainerruntime is the one place in trainersim that calls the
// Kubeflow Trainer's runtimecore.New, so that every call in the process is
// serialized, and it decorates the runtimes New returns so that a caller can
// watch what the trainer builds without changing it.
//
// # Why the calls are serialized
//
// runtimecore.New (pkg/runtime/core/core.go in the trainer module) writes two
// package-level variables: NewTrainingRuntime stores the TrainingRuntime it
// builds in trainingRuntimeFactory, and NewClusterTrainingRuntime, called
// right after it inside the same New, reads that variable to embed it; New
// then stores the whole map in runtimes. Two New calls running at once (the
// in-process manager starting while simctl explain builds its engine, or two
// environments of one test binary) could give one call's
// ClusterTrainingRuntime the other call's TrainingRuntime, with the other
// call's client. Holding a mutex around New rules that out.
//
// Nothing reads those variables after New has returned, so the lock is not
// needed beyond New: trainingRuntimeFactory is only read by
// NewClusterTrainingRuntime, which only New calls; runtimes is only read by
// runtimecore.Runtimes(), which neither the trainer's controllers, its
// webhooks nor trainersim call. The controllers (controller.SetupControllers)
// and webhooks (webhooks.Setup) get the map New returned passed in and keep
// it, and each runtime in it holds its own client and framework.
//
// # What it cannot do
//
// It cannot protect against code outside trainersim that calls
// runtimecore.New directly; in this module nothing else does.
package trainerruntime

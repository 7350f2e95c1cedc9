// Package probe asks a running cluster, any provider's, what a scenario
// needs to know around its writes: whether a namespace's default
// ServiceAccount exists, whether the Trainer's webhook sees a runtime (a
// server-side dry run of a probe TrainJob), which Pods a TrainJob has and
// whether they are scheduled.
package probe

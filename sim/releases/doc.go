// Package releases pins what trainersim runs, in one place: the Kubernetes
// control plane, KWOK, the Kubeflow Trainer releases and the JobSet each
// pins, Kueue, and the components a scenario may ask for. It lies below
// the scenario format (sim/apis/v1alpha1), which takes its lists from here,
// and below every cluster provider.
package releases

package sime2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/trainersim/trainersim/sim/runner"
)

// Assessment is the name of the one assessment of a scenario's feature.
const Assessment = "passes"

// LoadFeature is the name of the feature Scenarios returns when a file does
// not load.
const LoadFeature = "scenario files"

// Scenarios returns one e2e-framework feature per scenario file under paths
// (directories are searched for *.yaml and *.yml files, as simctl run
// does; one feature per explored order of a scenario that explores
// interleavings), named after the scenario and labelled with its labels.
// Each feature's one assessment, Assessment, runs the scenario on the
// provider's cluster through the runner, in a namespace and on nodes of its
// own. It fails with the failed step, its writes and its diff, as the
// ginkgo adapter's spec does; it is skipped with the runner's reason where
// the scenario does not hold for the cluster (another Trainer release, a
// provider it does not run on); and on a cluster whose Trainer runs in this
// process (envtest) it also checks simctl explain against the Trainer.
// The features come in the order simctl run starts the scenarios (those
// that keep a component to themselves, then those that wait on the
// cluster's timers, longest first) and may run in parallel
// (env.TestInParallel, with envconf's parallel tests enabled): scenarios
// that must not overlap wait for each other, and at most simctl run's
// default --parallel run at once.
//
// When a file does not load, Scenarios returns one feature, LoadFeature,
// that fails with the loader's lines (file:line:column: field: what is
// wrong); declared before Create, such files also keep Create from
// starting the cluster.
func (p *Provider) Scenarios(paths ...string) []features.Feature {
	files, missing, err := p.declare(paths)
	if err != nil {
		return []features.Feature{features.New(LoadFeature).
			Assess("load", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				t.Fatal(err.Error())
				return ctx
			}).Feature()}
	}
	var out []features.Feature
	for _, plan := range runner.InStartOrder(runner.Plans(files, nil)) {
		name := plan.Name()
		b := features.New(name)
		labels := plan.File.Scenario.Metadata.Labels
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			b = b.WithLabel(k, labels[k])
		}
		need := missing[plan.File]
		out = append(out, b.Assess(Assessment, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			s := p.started()
			if s == nil {
				t.Fatalf("scenario %s: no trainersim cluster runs: create it in the environment's Setup with envfuncs.CreateCluster(provider, name) before the features are tested, and destroy it in Finish", name)
			}
			if len(need) > 0 {
				t.Fatalf("scenario %s needs component %s, which the cluster was started without: declare its file with Provider.Scenarios before the environment's Setup creates the cluster (at package level), or name it in sim.ClusterOptions.Components", name, strings.Join(need, ", "))
			}
			v := s.Run(ctx, plan)
			if v.Skipped != "" {
				t.Skip(v.Skipped)
			}
			if v.Failure != "" {
				t.Fatal(v.Failure)
			}
			t.Log(v.Log)
			return ctx
		}).Feature())
	}
	return out
}

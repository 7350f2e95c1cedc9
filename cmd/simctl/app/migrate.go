package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim/migrate"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/scenario"
)

func newMigrateCommand(streams Streams) *cobra.Command {
	var manager string
	var strict, verify, createMissing bool
	cmd := &cobra.Command{
		Use:   "migrate FILE",
		Short: "Rewrite TrainJobs from podTemplateOverrides (Trainer v2.1.0) to runtimePatches (v2.2.0 and later)",
		Long: `migrate reads the TrainJobs of FILE (YAML, one or more documents; - reads
standard input) written for Kubeflow Trainer v2.1.0 and prints them, with
every other document of FILE, rewritten for Trainer v2.2.0 and later:

  spec.podTemplateOverrides  becomes one spec.runtimePatches entry of the
                             manager --manager, with one item of
                             trainingRuntimeSpec.template.spec.replicatedJobs
                             per target job, whose Pod template patch is the
                             job's overrides folded in list order with
                             v2.1.0's strategic merge (the later winning
                             field by field: maps and env, volumes,
                             containers merged by name; tolerations replaced
                             whole): the Pods get v2.1.0's values, but the
                             order of a merged list's items can differ when
                             the runtime already has one of them (a warning
                             says where)
  spec.labels, annotations   become the entry's trainingRuntimeSpec.template
                             metadata (the JobSet's labels and annotations,
                             as before)

Nothing else changes in content: keys, values, quoting and comments stay, but
every document is re-indented by 2 spaces (list items under their key) and
empty documents, comment-only ones included, are dropped. Nothing runs:
migrate reads the YAML alone.

Where the new TrainJob can behave otherwise on v2.3.0 than the old one did on
v2.1.0, migrate still writes it and prints a warning to standard error, one
sentence naming the override, the job and the field:

  FILE:LINE:COLUMN: warning: MESSAGE

  - two overrides of one job set the same list (env, volumes, containers,
    ...) with different items: the items can come out in another order
  - a field v2.1.0 never applied (not in its API, metadata other than labels
    and annotations, an override without target jobs) is left out
  - a target job the TrainJob's runtime does not have (when the runtime is in
    FILE or is one of v2.1.0's defaults): v2.1.0 rejected the TrainJob, v2.3.0
    adds a replicated job of that name whose Pod template is the override's
    patch

--verify then checks the migration on clusters: it starts one with the
Trainer v2.1.0 and creates FILE as written, then one with the newest Trainer
and creates the migrated FILE (every document, in one namespace; the
TrainJobs last), and compares what the TrainJobs render there: the Pod
template of each replicated job of their JobSets, and their Pods (by
replicated job, Job index and completion index), without what the servers
choose (names, uids, nodes, ServiceAccount token volumes) and the label
jobset.sigs.k8s.io/priority, which JobSet stamps since v0.11. The second
cluster's default ClusterTrainingRuntimes that the TrainJobs name get the
first's spec, so that the comparison shows the migration, not how the
default runtimes changed between releases. It prints how many Pod
templates and Pods it compared; what differs is printed as a go-cmp diff
(-old +new) on standard error, and simctl exits 1. It takes
about 20 seconds. With --strict, a warning stops migrate before --verify
starts a cluster.

A TrainJob whose Pods do not all come says why, from the namespace's
warning events: a Job's FailedCreate (a ServiceAccount that does not exist),
a Pod's FailedScheduling (a claim that does not exist or is not bound).
--create-missing creates, in the verify namespace of both clusters, the
ServiceAccounts, PersistentVolumeClaims (1Gi, ReadWriteOnce), ConfigMaps and
Secrets that the TrainJobs and runtimes of FILE name and FILE does not hold,
empty, and says which: the rendering is then verified without them.

Exit codes:
  0  migrated (warnings or not); with --verify, rendered the same
  1  --strict and a warning; or, with --verify: a Trainer refused to create
     a document, a TrainJob got no JobSet within 30 s, or fewer Pods than
     its JobSet asks for within the next 30 s, or what they render differs
  2  invalid input or usage: FILE cannot be read or is not YAML, holds no
     TrainJob, or a TrainJob already has runtimePatches, has nothing to
     migrate or an override v2.1.0 would refuse
  3  --verify could not start a cluster (or set up its namespace and
     runtimes, or stop it)`,
		Example: `  # the RuntimePatches guide's migration example
  simctl migrate sim/migrate/testdata/seed-migration.yaml

  # Kueue's entry instead of the SDK's
  simctl migrate --manager kueue.x-k8s.io/manager trainjob.yaml > trainjob-v2.3.yaml

  # and check it on Trainer v2.1.0 and the newest release
  simctl migrate --verify fixtures/migrate/seed-000.yaml

  # a TrainJob alone, whose ServiceAccount and claim the clusters lack
  simctl migrate --verify --create-missing trainjob.yaml

  # from a cluster still on v2.1.0, failing on any difference
  kubectl get trainjob my-job -o yaml | simctl migrate --strict -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withCode(ExitUsage, fmt.Errorf("migrate needs exactly one FILE (- for standard input), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return migrateFile(cmd.Context(), streams, args[0], manager, strict, verify, createMissing)
		},
	}
	cmd.Flags().StringVar(&manager, "manager", migrate.DefaultManager, "manager of the runtimePatches entry written")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when there is a warning (the TrainJobs are printed all the same; --verify does not run)")
	cmd.Flags().BoolVar(&verify, "verify", false, "run FILE on Trainer v2.1.0 and the migration on the newest release, and exit 1 with a diff where they render differently")
	cmd.Flags().BoolVar(&createMissing, "create-missing", false, "with --verify: create the ServiceAccounts, PersistentVolumeClaims, ConfigMaps and Secrets the TrainJobs name and FILE does not hold, empty, in the verify namespace")
	return cmd
}

// migrateFile prints the migration of file, and its warnings.
func migrateFile(ctx context.Context, streams Streams, file, manager string, strict, verify, createMissing bool) error {
	if createMissing && !verify {
		return withCode(ExitUsage, errors.New("--create-missing creates what --verify's clusters need: give --verify too"))
	}
	var data []byte
	var err error
	name := file
	if file == "-" {
		name = "stdin"
		data, err = io.ReadAll(streams.In)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return withCode(ExitUsage, fmt.Errorf("failed to read %s: %w", name, err))
	}
	out, warnings, err := migrate.Migrate(data, migrate.Options{Manager: manager, File: name})
	var problems *scenario.Errors
	switch {
	case errors.As(err, &problems) && len(*problems) > 1:
		lines := make([]string, len(*problems))
		for i, p := range *problems {
			lines[i] = "  " + p.Error()
		}
		return withCode(ExitUsage, fmt.Errorf("%s in %s:\n%s", plural(len(*problems), "problem"), name, strings.Join(lines, "\n")))
	case err != nil:
		return withCode(ExitUsage, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(streams.Err, w.String())
	}
	if _, err := streams.Out.Write(out); err != nil {
		return withCode(ExitFailed, fmt.Errorf("failed to write: %w", err))
	}
	if strict && len(warnings) > 0 {
		return withCode(ExitFailed, fmt.Errorf("%s (--strict)", plural(len(warnings), "warning")))
	}
	if verify {
		from, err := releases.LookupTrainer(migrate.SourceRelease)
		if err != nil {
			return err
		}
		releases := releases.Trainers
		return verifyMigration(ctx, streams.Err, data, out, from, releases[len(releases)-1], createMissing)
	}
	return nil
}

package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim/auditimport"
	"github.com/trainersim/trainersim/sim/scenario"
)

func newImportCommand(streams Streams) *cobra.Command {
	var (
		logs        []string
		trainJobs   []string
		out         string
		name        string
		namespace   string
		together    bool
		from        string
		kubeContext string
	)
	cmd := &cobra.Command{
		Use:   "import --audit-log FILE|DIR [--trainjob NAMESPACE/NAME]... [--namespace NS] [-o FILE]",
		Short: "Turn an API server's audit log into a scenario",
		Long: `import reads an API server's audit log (JSON lines of audit.k8s.io/v1 Events, as
'simctl up --audit-log' and 'simctl run --audit-log' record them, or a cluster's
own: docs/record.md) and writes the scenario of the writes to the chosen
TrainJobs (--trainjob, repeatable; or every TrainJob of --namespace; default:
every TrainJob the log writes, in one namespace) and of what they depend on in
their namespace (ServiceAccounts, PVCs, ConfigMaps, TrainingRuntimes,
ResourceQuotas, LimitRanges):

- one actor per user and field manager that wrote them, named after the field
  manager, its user impersonated on replay (unless it is simctl's admin);
- what was created before the first write to a TrainJob (a runtime, a
  ServiceAccount, a ResourceQuota) as spec.setup, which the first write waits
  for (a quota until it is counted as it was then);
- one step per write, in the order the server completed them, with the verb
  and patch type the request used (create, update, JSON merge patch, JSON
  patch, server-side apply, forced or not) and its body; an update or patch
  that carried a resourceVersion reads it from the step whose answer had it,
  or sends it as it was when the server refused it 409, or else reads the
  TrainJob just before it;
- each refused write with an expectError of the server's answer (the part of
  its message without the namespace, times and UIDs, which differ on replay);
- a change of runtimePatches refused while the JobSet counted a Job active
  with a gate that holds the JobSet controller's report that the Job
  stopped until it, so that on replay it is refused on the same JobSet;
- writes that raced (one received before the one before it was answered) one
  after the other in the order the server answered them, with a note
  (--concurrently: together, in a concurrently group);
- the nodes a recorded run made for the namespace, as node groups;
- a last step expecting each TrainJob's runtimePatches entries as the log
  leaves them.

The components' writes (the Trainer, JobSet, Kueue, kube-controller-manager,
the scheduler, kubelets) are left out: the controllers of the cluster the
scenario runs on do that work again.

What the log does not hold and the scenario needs (a TrainingRuntime created
before the log began, the nodes the Pods were bound to on a cluster whose
nodes registered before it) is read from the cluster the log came from with
--from-cluster KUBECONFIG; without it, the scenario gets a placeholder for
each ("<fill in: ...>"), which 'simctl lint' names one by one and which keep
the scenario from running until filled in. What else it does not hold (a
ClusterTrainingRuntime, a user's RBAC) is said in notes, on standard error
and at the top of the scenario. The scenario is checked as 'simctl lint'
checks files.

A directory is read file by file in name order (rotated logs first). The log
is streamed, never held whole.

'simctl minimize FILE' then shortens the scenario to the writes that decide
how it ends.

Exit codes: 0 written (with placeholders or not), 2 bad input (a line that is
not an audit event, a log cut short, writes recorded without their bodies, a
TrainJob the log never writes), 3 --from-cluster's cluster did not answer or
lacks what the log needs, 1 the scenario made does not lint (a bug: please
report it).`,
		Example: `  simctl run --audit-log /tmp/recorded scenarios/multi-manager/lost-update.yaml
  simctl import --audit-log /tmp/recorded/audit.log -o /tmp/lost-update-imported.yaml
  simctl run /tmp/lost-update-imported.yaml
  simctl minimize /tmp/lost-update-imported.yaml -o /tmp/lost-update-min.yaml

  simctl import --audit-log /var/log/audit/ --trainjob team-a/llm -o incident.yaml \
    --from-cluster ~/.kube/config`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if len(logs) == 0 {
				return withCode(ExitUsage, errors.New("give the audit log with --audit-log FILE or DIR"))
			}
			opts := auditimport.Options{TrainJobs: trainJobs, Namespace: namespace, Name: name, Concurrently: together}
			if from != "" {
				c, _, err := connectKubeconfig(from, kubeContext)
				if err != nil {
					return withCode(ExitCluster, fmt.Errorf("--from-cluster: %w", err))
				}
				opts.FromCluster = c
			}
			res, err := auditimport.Import(logs, opts)
			if err != nil {
				if auditimport.IsInputError(err) {
					return withCode(ExitUsage, err)
				}
				if ce := (*auditimport.ClusterError)(nil); errors.As(err, &ce) {
					return withCode(ExitCluster, err)
				}
				return withCode(ExitFailed, err)
			}
			data, err := res.YAML()
			if err != nil {
				return withCode(ExitFailed, err)
			}
			path := out
			if path == "" {
				path = "imported.yaml"
			}
			var placeholders scenario.Errors
			if _, err := scenario.Load(path, data, scenario.Options{}); err != nil {
				var errs *scenario.Errors
				if !errors.As(err, &errs) || slices.ContainsFunc(*errs, func(e *scenario.Error) bool { return !e.Placeholder }) {
					return withCode(ExitFailed, fmt.Errorf("the imported scenario does not lint (a bug of import):\n%w", err))
				}
				placeholders = *errs
			}
			fmt.Fprintf(streams.Err, "read %d events: %d writes of %d actors to TrainJob %s of namespace %s; %d writes of components left out\n", res.Events, res.Writes, len(res.Scenario.Spec.Actors), strings.Join(res.TrainJobs, ", "), res.Namespace, res.Components)
			for _, n := range res.Notes {
				fmt.Fprintf(streams.Err, "note: %s\n", n)
			}
			if out == "" {
				if _, err := streams.Out.Write(data); err != nil {
					return err
				}
			} else {
				// -o into a folder not made yet makes it: the import's work
				// is not lost to a path.
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					return withCode(ExitFailed, fmt.Errorf("-o %s: %w; name a file in a folder that can be written, or leave -o out for standard output", out, err))
				}
				if err := os.WriteFile(out, data, 0o644); err != nil {
					return withCode(ExitFailed, fmt.Errorf("-o %s: %w; name a file in a folder that can be written, or leave -o out for standard output", out, err))
				}
				fmt.Fprintf(streams.Err, "scenario: %s\n", out)
			}
			if len(placeholders) > 0 {
				fmt.Fprintf(streams.Err, "%d placeholder(s) to fill in before the scenario runs (or import again with --from-cluster KUBECONFIG):\n%v\n", len(placeholders), placeholders)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&logs, "audit-log", nil, "the audit log: a file of JSON lines, or a directory of rotated files (repeatable)")
	cmd.Flags().StringArrayVar(&trainJobs, "trainjob", nil, "a TrainJob to import, as NAMESPACE/NAME (repeatable; default: every TrainJob the log writes)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "import every TrainJob the log writes in this namespace (instead of --trainjob)")
	cmd.Flags().BoolVar(&together, "concurrently", false, "send writes that raced together, in a concurrently group whose interleavings can explore their orders\n(default: one after the other, in the order the server answered them, which replays the log's outcome)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the scenario to this file (default: standard output)")
	cmd.Flags().StringVar(&name, "name", "", "the scenario's name (default: imported-<the first TrainJob>)")
	cmd.Flags().StringVar(&from, "from-cluster", "", "a kubeconfig of the cluster the log came from: read what the log does not hold from it\n(a TrainingRuntime created before the log began, the nodes the Pods were bound to; default: placeholders)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "with --from-cluster: the kubeconfig context (default: its current one)")
	return cmd
}

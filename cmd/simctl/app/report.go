package app

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
)

func newReportCommand(streams Streams) *cobra.Command {
	var merge bool
	var out string
	cmd := &cobra.Command{
		Use:   "report DIR | report --merge --report-dir OUT SHARD_DIR...",
		Short: "Rebuild junit.xml, report.json and report.html from report.jsonl, also after a killed run",
		Long: `report reads DIR/report.jsonl, which 'simctl run --report-dir DIR' starts
once its cluster is up and to which it appends each scenario's result, synced
to disk, the moment the scenario finishes. From it, report writes
DIR/junit.xml, DIR/report.json and DIR/report.html, each replaced
atomically, and prints one line per scenario and the counts.

Use it after a run that was killed (SIGKILL, the OOM killer, a CI job's time
limit, a crash) and so never wrote report.json and report.html: the reports
then hold every scenario that finished before the kill, and say, as this
command does, that the run did not finish and how many runs never reported
("run did not finish: 12 scenarios have results; 61 never reported"). On the
report.jsonl of a run that ended, report writes what the run wrote.

report.jsonl holds one JSON record per line: first {"record":"start",
"start":{...}} (the versions, the start time, the runs planned), then
{"record":"scenario","scenario":{...}} per finished run (a scenario of
report.json, in the order they finished), and {"record":"end","end":{...}}
if the run ended.

A line of report.jsonl that cannot be read, such as a last line cut short by
the kill, is skipped with a warning naming the file and the line; every other
result is kept.

--merge merges the --report-dirs of the shards of one run (simctl run
--shard K/N, one per CI machine) into the reports one run of every
scenario would have written, in --report-dir OUT: every shard's results in
shard order, the run lasting from the first shard's start to the last one's
end. A shard of the N that is not given is named, and the merged run fails:
its scenarios have no result. Directories that are not shards of one run (a
whole run, shards of another N, one shard twice, other versions) are
refused, each named.

Exit codes: 0 the run ended and every scenario passed, 1 a scenario failed
or the run did not finish (it was killed or interrupted; with --merge, a
shard is missing), 2 DIR or DIR/report.jsonl is missing or DIR/report.jsonl
is not a run's record, or (--merge) the directories are not shards of one
run.`,
		Example: `  simctl run scenarios/ --report-dir out   # killed half-way: out/report.jsonl, out/junit.xml
  simctl report out                         # out/report.json and out/report.html of what finished
  jq -r 'select(.record == "scenario") | .scenario.name' out/report.jsonl
  simctl run scenarios/ --shard 2/3 --shard-durations last-run/ --report-dir shard-2   # on each of 3 machines
  simctl report --merge --report-dir merged shard-1 shard-2 shard-3`,
		Args: func(cmd *cobra.Command, args []string) error {
			if merge {
				return cobra.MinimumNArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if merge {
				if out == "" {
					return withCode(ExitUsage, errors.New("--merge writes the merged reports into --report-dir: give it"))
				}
				return mergeReports(streams, out, args)
			}
			if out != "" {
				return withCode(ExitUsage, errors.New("--report-dir is where --merge writes: report DIR writes into DIR"))
			}
			return rebuildReports(streams, args[0])
		},
	}
	cmd.Flags().BoolVar(&merge, "merge", false, "merge the report directories of the shards of one run (simctl run --shard K/N) into --report-dir")
	cmd.Flags().StringVar(&out, "report-dir", "", "with --merge: where the merged junit.xml, report.json and report.html go")
	return cmd
}

// readRunDir reads the run of a --report-dir: its report.jsonl.
func readRunDir(streams Streams, dir string) (*results.Run, error) {
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, withCode(ExitUsage, fmt.Errorf("report directory %s does not exist", dir))
		}
		return nil, withCode(ExitUsage, fmt.Errorf("invalid report directory: %w", err))
	} else if !fi.IsDir() {
		return nil, withCode(ExitUsage, fmt.Errorf("%s is not a directory: give the --report-dir of a simctl run", dir))
	}
	path := filepath.Join(dir, reports.JSONLFile)
	run, err := reports.ReadJournal(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, withCode(ExitUsage, fmt.Errorf("%s does not exist: %s is not the --report-dir of a simctl run, or the run stopped before its cluster was up", path, dir))
	case err != nil:
		return nil, withCode(ExitUsage, err)
	}
	for _, p := range run.Problems {
		fmt.Fprintf(streams.Err, "warning: %s\n", p)
	}
	return run, nil
}

// rebuildReports writes dir's reports from dir/report.jsonl.
func rebuildReports(streams Streams, dir string) error {
	run, err := readRunDir(streams, dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, reports.JSONLFile)
	printRun(streams.Out, "in "+path, run)
	return writeRun(streams, dir, run)
}

// writeRun writes run's reports into dir and prints its summary.
func writeRun(streams Streams, dir string, run *results.Run) error {
	summary := resultSummary(run.Scenarios)
	fmt.Fprintln(streams.Out, summary)
	incomplete := run.Incomplete()
	if incomplete != "" {
		fmt.Fprintln(streams.Out, incomplete)
	}
	if err := reports.WriteAll(dir, run); err != nil {
		return withCode(ExitFailed, fmt.Errorf("failed to write reports: %w", err))
	}
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(streams.Out, "reports: %s\n", filepath.Join(abs, reports.HTMLFile))
	if !run.Passed() {
		return withCode(ExitFailed, errors.New(cmp.Or(incomplete, summary)))
	}
	return nil
}

// mergeReports merges the runs of the shard directories into out's reports.
func mergeReports(streams Streams, out string, dirs []string) error {
	var runs []*results.Run
	for _, dir := range dirs {
		run, err := readRunDir(streams, dir)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	merged, err := reports.Merge(runs, dirs)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	printRun(streams.Out, "of shards "+strings.Join(merged.Shards, ", "), merged)
	return writeRun(streams, out, merged)
}

// printRun prints what ran and one line per scenario of run, which is
// where it says.
func printRun(out io.Writer, where string, run *results.Run) {
	fmt.Fprintf(out, "%d scenarios %s: %s, Kubernetes %s, Trainer %s, JobSet %s%s, started %s\n",
		len(run.Scenarios), where, run.Cluster, run.KubernetesVersion, run.TrainerVersion, run.JobSetVersion, kueueVersion(run.KueueVersion), run.Started.Format("2006-01-02 15:04:05 MST"))
	for i := range run.Scenarios {
		printScenario(out, &run.Scenarios[i], false)
	}
}

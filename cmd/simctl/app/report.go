package app

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/reports"
)

func newReportCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
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

Exit codes: 0 the run ended and every scenario passed, 1 a scenario failed
or the run did not finish (it was killed or interrupted), 2 DIR or
DIR/report.jsonl is missing or DIR/report.jsonl is not a run's record.`,
		Example: `  simctl run scenarios/ --report-dir out   # killed half-way: out/report.jsonl, out/junit.xml
  simctl report out                         # out/report.json and out/report.html of what finished
  jq -r 'select(.record == "scenario") | .scenario.name' out/report.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rebuildReports(streams, args[0])
		},
	}
}

// rebuildReports writes dir's reports from dir/report.jsonl.
func rebuildReports(streams Streams, dir string) error {
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return withCode(ExitUsage, fmt.Errorf("report directory %s does not exist", dir))
		}
		return withCode(ExitUsage, fmt.Errorf("invalid report directory: %w", err))
	} else if !fi.IsDir() {
		return withCode(ExitUsage, fmt.Errorf("%s is not a directory: give the --report-dir of a simctl run", dir))
	}
	path := filepath.Join(dir, reports.JSONLFile)
	run, err := reports.ReadJournal(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return withCode(ExitUsage, fmt.Errorf("%s does not exist: %s is not the --report-dir of a simctl run, or the run stopped before its cluster was up", path, dir))
	case err != nil:
		return withCode(ExitUsage, err)
	}
	for _, p := range run.Problems {
		fmt.Fprintf(streams.Err, "warning: %s\n", p)
	}
	fmt.Fprintf(streams.Out, "%d scenarios in %s: %s, Kubernetes %s, Trainer %s, JobSet %s%s, started %s\n",
		len(run.Scenarios), path, run.Cluster, run.KubernetesVersion, run.TrainerVersion, run.JobSetVersion, kueueVersion(run.KueueVersion), run.Started.Format("2006-01-02 15:04:05 MST"))
	for i := range run.Scenarios {
		printScenario(streams.Out, &run.Scenarios[i], false)
	}
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

// Command roundtrip measures the round trip of recorded runs: it runs
// scenarios with their API server's audit log recorded (simctl run
// --audit-log), imports each scenario run's namespace back into a scenario
// (sim/auditimport, as simctl import --namespace does), runs the imports,
// and prints how many replay to the original's verdict, and why each other
// does not (its failure).
//
//	go run ./hack/roundtrip                      # the corpus, scenarios/
//	go run ./hack/roundtrip scenarios/multi-manager/
//	go run ./hack/roundtrip -dir /tmp/rt          # keep the logs, imports and reports
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/auditimport"
)

func main() {
	dir := flag.String("dir", "", "where the log, the imports and the reports go (default: a temporary directory, removed)")
	flag.Parse()
	paths := flag.Args()
	if len(paths) == 0 {
		paths = []string{"scenarios"}
	}
	if err := run(*dir, paths); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(1)
	}
}

func run(dir string, paths []string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "trainersim-roundtrip-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	simctl := filepath.Join(dir, "simctl")
	if out, err := exec.Command("go", "build", "-o", simctl, "./cmd/simctl").CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build simctl: %v\n%s", err, out)
	}
	logDir, imported := filepath.Join(dir, "log"), filepath.Join(dir, "imported")
	fmt.Printf("recording %s ...\n", strings.Join(paths, " "))
	original, err := simctlRun(simctl, filepath.Join(dir, "original"), append([]string{"--audit-log", logDir}, paths...)...)
	if err != nil {
		return err
	}
	trips, leftOut, err := auditimport.ImportRuns(filepath.Join(logDir, "audit.log"), original, imported)
	if err != nil {
		return err
	}
	for name, why := range leftOut {
		fmt.Printf("left out %s: %s\n", name, why)
	}
	fmt.Printf("replaying %d imports ...\n", len(trips))
	replay, err := simctlRun(simctl, filepath.Join(dir, "replay"), imported)
	if err != nil {
		return err
	}
	auditimport.Replayed(trips, replay)
	agree, imports := 0, 0
	var lines []string
	for _, t := range trips {
		if t.Err == nil {
			imports++
		}
		if t.Agrees() {
			agree++
		} else {
			lines = append(lines, "  "+t.Difference())
		}
	}
	fmt.Printf("%d scenario runs (skipped ones left out); %d imported; %d replay to the original's verdict\n", len(trips), imports, agree)
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}

// simctlRun runs simctl run with a report directory and returns the
// report; a run whose scenarios fail is a result, not an error.
func simctlRun(simctl, reportDir string, args ...string) (results.Run, error) {
	cmd := exec.Command(simctl, append([]string{"run", "--report-dir", reportDir}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return results.Run{}, fmt.Errorf("simctl run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var run results.Run
	data, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		return run, err
	}
	return run, json.Unmarshal(data, &run)
}

package reports

import (
	"fmt"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/shake"
)

// What the reports say of a shaken run's order-dependent scenarios.

// OrderDependentLine says what the shaker found of a scenario, in one line.
func OrderDependentLine(f shake.Finding) string {
	return fmt.Sprintf("order-dependent: %s passed %d of %d shaken runs; passes with --shake-seed %d, fails with --shake-seed %d",
		f.Scenario, f.Passed, f.Runs, f.Passing, f.Failing)
}

// orderDependentFile is the file of a shaken scenario.
func orderDependentFile(run *results.Run, name string) string {
	if sc := shakenRun(run, name, nil); sc != nil {
		return sc.File
	}
	return ""
}

// orderDependentReplay is the command that replays a finding's failing run.
func orderDependentReplay(run *results.Run, f shake.Finding) string {
	if sc := shakenRun(run, f.Scenario, &f.Failing); sc != nil {
		return sc.Shake.Replay
	}
	return ""
}

// shakenRun finds a shaken run of the scenario of a name, of a seed when
// seed is set.
func shakenRun(run *results.Run, name string, seed *uint64) *results.Scenario {
	for i := range run.Scenarios {
		sc := &run.Scenarios[i]
		if sc.Shake != nil && sc.Shake.Of == name && (seed == nil || sc.Shake.Seed == *seed) {
			return sc
		}
	}
	return nil
}

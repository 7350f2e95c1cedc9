package auditimport

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Trip is one scenario run's round trip: the run as recorded, its import,
// and the import's replay.
type Trip struct {
	Original results.Scenario
	// File is the imported scenario; Err why there is none.
	File string
	Err  error
	// Replay is the imported scenario's run: nil until Replayed, or when
	// the replay has none.
	Replay *results.Scenario
}

// NotInTheLog says why a scenario run cannot be rebuilt from an audit log,
// or "": a view kept watch events back from a component, or a component
// was crashed, stopped or started. The log records the writes the API
// server received, not what a component read nor when it was up.
func NotInTheLog(sc *results.Scenario) string {
	var why []string
	for _, st := range sc.Steps {
		if st.Kind == v1alpha1.VerbComponent {
			why = append(why, "a component step crashed, stopped or started a component")
			break
		}
	}
	if tl := sc.Timeline; tl != nil && slices.ContainsFunc(tl.Entries, func(e results.TimelineEntry) bool {
		return e.Kind == results.EntryEventKeptBack || e.Kind == results.EntryListServedStale
	}) {
		why = append(why, "a view kept watch events back from a component")
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, " and ") + ": an audit log records the writes, not what a component read nor when it was up"
}

// ImportRuns imports each scenario run of run (skipped ones left out, and
// those NotInTheLog, which left out returns by name with the reason) from
// the audit log at log, read once for all of them, into dir: a file per
// run, named, like the imported scenario, after the run's namespace.
func ImportRuns(log string, run results.Run, dir string) (trips []*Trip, leftOut map[string]string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	files, err := logFiles([]string{log})
	if err != nil {
		return nil, nil, err
	}
	leftOut = map[string]string{}
	var readers []*reader
	for _, sc := range run.Scenarios {
		if sc.Skipped != "" {
			continue
		}
		if why := NotInTheLog(&sc); why != "" {
			leftOut[sc.Name] = why
			continue
		}
		trips = append(trips, &Trip{Original: sc})
		readers = append(readers, newReader(sc.Namespace, map[string]bool{}))
	}
	if err := readFiles(files, readers); err != nil {
		return nil, nil, err
	}
	for i, t := range trips {
		res, err := readers[i].result(files, Options{Namespace: t.Original.Namespace, Name: t.Original.Namespace})
		if err == nil {
			var data []byte
			if data, err = res.YAML(); err == nil {
				t.File = filepath.Join(dir, t.Original.Namespace+".yaml")
				err = os.WriteFile(t.File, data, 0o644)
			}
		}
		t.Err = err
	}
	return trips, leftOut, nil
}

// Replayed gives each trip its scenario's run of replay.
func Replayed(trips []*Trip, replay results.Run) {
	byName := map[string]*results.Scenario{}
	for i := range replay.Scenarios {
		byName[replay.Scenarios[i].Name] = &replay.Scenarios[i]
	}
	for _, t := range trips {
		if t.Err == nil {
			t.Replay = byName[t.Original.Namespace]
		}
	}
}

// ReplayedShaken is a trip for each shaken replay of each import (simctl
// run --shake of the imports): its original with that run as the replay,
// so that an import whose replay depends on the recording's timing
// differs under the delays of some seed. A trip without a shaken replay
// is one too, without a replay.
func ReplayedShaken(trips []*Trip, shaken results.Run) []*Trip {
	var out []*Trip
	for _, t := range trips {
		n := len(out)
		for i := range shaken.Scenarios {
			if sc := &shaken.Scenarios[i]; t.Err == nil && sc.Shake != nil && sc.Shake.Of == t.Original.Namespace {
				out = append(out, &Trip{Original: t.Original, File: t.File, Replay: sc})
			}
		}
		if len(out) == n {
			out = append(out, &Trip{Original: t.Original, File: t.File, Err: t.Err})
		}
	}
	return out
}

// Agrees reports whether the replay kept the original's verdict and ended
// with each runtimePatches entry owned by the same field managers.
func (t *Trip) Agrees() bool {
	return t.Replay != nil && t.Replay.Passed == t.Original.Passed && ownersOf(t.Replay) == ownersOf(&t.Original)
}

// ownersOf is who owned each entry when sc ended, one line per entry in
// order: "TrainJob entry: managers".
func ownersOf(sc *results.Scenario) string {
	var lines []string
	for _, o := range sc.FinalOwners {
		lines = append(lines, fmt.Sprintf("%s %s: %s", o.TrainJob, o.Entry, strings.Join(o.Managers, ",")))
	}
	slices.Sort(lines)
	return strings.Join(lines, "; ")
}

// Difference says how the trip went wrong, "" when it agrees. The name
// is the original run's, with its order for an explored interleaving.
func (t *Trip) Difference() string {
	name := t.Original.Name
	switch {
	case t.Err != nil:
		return fmt.Sprintf("not imported: %s: %v", name, t.Err)
	case t.Replay == nil:
		return fmt.Sprintf("no replay: %s", name)
	case t.Replay.Passed != t.Original.Passed:
		return fmt.Sprintf("differs: %s: the original passed=%t, the replay passed=%t%s: %s", name, t.Original.Passed, t.Replay.Passed, shakenBy(t.Replay), firstLine(t.Replay.Failure))
	case !t.Agrees():
		return fmt.Sprintf("differs: %s: the original ended with the entries owned as [%s], the replay%s as [%s]", name, ownersOf(&t.Original), shakenBy(t.Replay), ownersOf(t.Replay))
	}
	return ""
}

// shakenBy says which seed's delays a shaken replay ran with and how to
// run it again; "" for a plain replay.
func shakenBy(replay *results.Scenario) string {
	if replay.Shake == nil {
		return ""
	}
	return fmt.Sprintf(" (shaken with seed %d: %s)", replay.Shake.Seed, replay.Shake.Replay)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

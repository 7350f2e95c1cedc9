package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/trainersim/trainersim/results"
)

// JSONLFile is a run's journal: one JSON record per line, appended and
// synced to disk as the run goes, from which ReadJournal rebuilds the Run of
// a run that was killed before it could write the other reports.
const JSONLFile = "report.jsonl"

// JournalFormat is the version of report.jsonl's records, the start
// record's format; ReadJournal reads this version only.
const JournalFormat = 1

// Kinds of record, the "record" field of every line of report.jsonl.
const (
	// RecordStart is the first line: JournalStart.
	RecordStart = "start"
	// RecordScenario is one finished run of a scenario: Scenario.
	RecordScenario = "scenario"
	// RecordEnd is the last line of a run that ended, every scenario
	// finished or interrupted: JournalEnd. A killed run has none.
	RecordEnd = "end"
)

// ErrNotJournal is returned by ReadJournal for a file that does not start
// with the start record of a simctl run.
var ErrNotJournal = errors.New("not a simctl run journal")

// JournalStart is the first record of report.jsonl: what a run knows when
// it starts.
type JournalStart struct {
	// Format is JournalFormat.
	Format int `json:"format"`
	// Started, Cluster and the versions are the Run's.
	Started           time.Time `json:"started"`
	Cluster           string    `json:"cluster,omitempty"`
	KubernetesVersion string    `json:"kubernetesVersion"`
	TrainerVersion    string    `json:"trainerVersion"`
	JobSetVersion     string    `json:"jobSetVersion"`
	KueueVersion      string    `json:"kueueVersion,omitempty"`
	TrainerCheckout   string    `json:"trainerCheckout,omitempty"`
	KueueCheckout     string    `json:"kueueCheckout,omitempty"`
	// Paths are the scenario paths the run was given.
	Paths []string `json:"paths,omitempty"`
	// Shard is the Run's.
	Shard string `json:"shard,omitempty"`
	// Runs are the runs the run is to make, in order: one per scenario,
	// one per explored order of a scenario that explores interleavings.
	Runs []PlannedRun `json:"runs"`
}

// PlannedRun is one run of a scenario that a run is to make.
type PlannedRun struct {
	// Name is the result's Scenario.Name: the scenario's name, with the
	// order for a run of an explored interleaving.
	Name string `json:"name"`
	// File is the scenario's file.
	File string `json:"file"`
}

// JournalEnd is the last record of a run that ended.
type JournalEnd struct {
	// Duration and Interrupted are the Run's.
	Duration    time.Duration `json:"duration"`
	Interrupted bool          `json:"interrupted,omitempty"`
}

// journalRecord is one line of report.jsonl: Record says which of the other
// fields it holds.
type journalRecord struct {
	Record   string            `json:"record"`
	Start    *JournalStart     `json:"start,omitempty"`
	Scenario *results.Scenario `json:"scenario,omitempty"`
	End      *JournalEnd       `json:"end,omitempty"`
}

// Journal keeps a run's results on disk as the run goes, so that a run
// killed with SIGKILL loses none that finished: each result is appended to
// report.jsonl and synced before Record returns, and junit.xml is rewritten
// atomically with every result so far. A Journal is safe for concurrent
// use.
type Journal struct {
	dir   string
	mu    sync.Mutex
	f     *os.File
	start JournalStart
	// results in the order they were recorded.
	results []results.Scenario
}

// CreateJournal starts a run's journal in dir (created if missing): it
// replaces report.jsonl with one holding the start record, synced, writes
// a junit.xml of no result yet, and removes the report.json and
// report.html of an earlier run, so that nothing in dir describes another
// run. start.Format is set to JournalFormat.
func CreateJournal(dir string, start JournalStart) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create report directory: %w", err)
	}
	start.Format = JournalFormat
	line, err := journalLine(journalRecord{Record: RecordStart, Start: &start})
	if err != nil {
		return nil, err
	}
	// The start record goes in through a rename, so that report.jsonl is
	// at every instant either an earlier run's or this one's.
	f, err := os.CreateTemp(dir, "."+JSONLFile+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", JSONLFile, err)
	}
	j := &Journal{dir: dir, f: f, start: start}
	fail := func(err error) (*Journal, error) {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	if _, err := f.Write(line); err != nil {
		return fail(fmt.Errorf("failed to write %s: %w", JSONLFile, err))
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(fmt.Errorf("failed to set mode of %s: %w", JSONLFile, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("failed to sync %s: %w", JSONLFile, err))
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, JSONLFile)); err != nil {
		return fail(fmt.Errorf("failed to rename %s into place: %w", JSONLFile, err))
	}
	if err := syncDir(dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	for _, stale := range []string{JSONFile, HTMLFile} {
		if err := os.Remove(filepath.Join(dir, stale)); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = f.Close()
			return nil, fmt.Errorf("failed to remove the %s of an earlier run: %w", stale, err)
		}
	}
	if err := j.writeJUnit(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return j, nil
}

// Record appends sc's result to report.jsonl and syncs it to disk, then
// rewrites junit.xml atomically with every result recorded so far, in the
// order of the start record's runs, as a run that has not finished.
func (j *Journal) Record(sc *results.Scenario) error {
	if sc == nil {
		return errors.New("failed to record a scenario: scenario is nil")
	}
	line, err := journalLine(journalRecord{Record: RecordScenario, Scenario: sc})
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("failed to record %s: %s is closed", sc.Name, JSONLFile)
	}
	if err := j.append(line); err != nil {
		return fmt.Errorf("failed to record %s: %w", sc.Name, err)
	}
	j.results = append(j.results, *sc)
	return j.writeJUnit()
}

// Finish appends the end record to report.jsonl, syncs and closes it, then
// writes junit.xml, report.json and report.html of run with WriteAll. It
// returns the first error but attempts every write.
func (j *Journal) Finish(run *results.Run) error {
	if run == nil {
		return fmt.Errorf("failed to finish %s: %w", JSONLFile, errNilRun)
	}
	line, err := journalLine(journalRecord{Record: RecordEnd, End: &JournalEnd{Duration: run.Duration, Interrupted: run.Interrupted}})
	j.mu.Lock()
	if err == nil && j.f == nil {
		err = fmt.Errorf("failed to finish %s: it is closed", JSONLFile)
	}
	if err == nil {
		err = j.append(line)
	}
	err = errors.Join(err, j.close())
	j.mu.Unlock()
	if werr := WriteAll(j.dir, run); err == nil {
		err = werr
	}
	return err
}

// Close closes report.jsonl without an end record, which leaves the run
// unfinished; it does nothing after Finish.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.close()
}

func (j *Journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if err != nil {
		return fmt.Errorf("failed to close %s: %w", JSONLFile, err)
	}
	return nil
}

// append writes one line and syncs it.
func (j *Journal) append(line []byte) error {
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("failed to append to %s: %w", JSONLFile, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", JSONLFile, err)
	}
	return nil
}

// writeJUnit rewrites junit.xml with the results so far.
func (j *Journal) writeJUnit() error {
	run := journalRun(&j.start, j.results, nil)
	return writeFileAtomic(filepath.Join(j.dir, JUnitFile), func(w io.Writer) error { return WriteJUnit(w, run) })
}

// journalLine encodes one record as a line: JSON escapes every line break
// inside strings, so a record is one line whatever it holds.
func journalLine(rec journalRecord) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, fmt.Errorf("failed to encode %s record: %w", rec.Record, err)
	}
	return buf.Bytes(), nil
}

// journalRun is the Run of a journal's records: the start record's fields,
// the results in the order of its runs (results it does not name after
// them, as recorded), the runs without a result as NotReported; without an
// end record, Unfinished, and the Duration up to the end of the last
// result.
func journalRun(start *JournalStart, done []results.Scenario, end *JournalEnd) *results.Run {
	run := &results.Run{
		Started:           start.Started,
		Cluster:           start.Cluster,
		KubernetesVersion: start.KubernetesVersion,
		TrainerVersion:    start.TrainerVersion,
		JobSetVersion:     start.JobSetVersion,
		KueueVersion:      start.KueueVersion,
		TrainerCheckout:   start.TrainerCheckout,
		KueueCheckout:     start.KueueCheckout,
		Shard:             start.Shard,
		Scenarios:         slices.Clone(done),
	}
	order := make(map[string]int, len(start.Runs))
	for i, p := range start.Runs {
		order[p.Name] = i
	}
	position := func(name string) int {
		if i, ok := order[name]; ok {
			return i
		}
		return len(start.Runs)
	}
	sort.SliceStable(run.Scenarios, func(a, b int) bool {
		return position(run.Scenarios[a].Name) < position(run.Scenarios[b].Name)
	})
	reported := make(map[string]bool, len(done))
	for i := range done {
		reported[done[i].Name] = true
	}
	for _, p := range start.Runs {
		if !reported[p.Name] {
			run.NotReported = append(run.NotReported, p.Name)
		}
	}
	if end != nil {
		run.Duration, run.Interrupted = end.Duration, end.Interrupted
		return run
	}
	run.Unfinished = true
	for i := range done {
		if d := done[i].Started.Add(done[i].Duration).Sub(start.Started); d > run.Duration {
			run.Duration = d
		}
	}
	return run
}

// ReadJournal reads the report.jsonl at path and returns the Run it
// records: what CreateJournal, Record and Finish wrote, as WriteAll would
// have written it at the end of the run. A run without an end record (it
// was killed) is Unfinished, with the results that reached the disk. A line
// that cannot be read, such as a last line cut short by the kill, is
// skipped and named in Run.Problems as PATH:LINE: what was wrong; the other
// lines are kept. When a run recorded one scenario twice, the later result
// is kept.
//
// A file that cannot be opened or read is an error (wrapping
// os.ErrNotExist for a missing file); so is one whose first line is not a
// start record of JournalFormat (ErrNotJournal).
func ReadJournal(path string) (*results.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer f.Close()
	var (
		start    *JournalStart
		end      *JournalEnd
		done     []results.Scenario
		byName   = map[string]int{}
		problems []string
	)
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		data, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("failed to read %s: %w", path, err)
		}
		if len(data) == 0 && err == io.EOF {
			break
		}
		cut := err == io.EOF // the last line, without its line break
		var rec journalRecord
		problem := ""
		if len(bytes.TrimSpace(data)) == 0 {
			problem = "empty line"
		} else if derr := json.Unmarshal(data, &rec); derr != nil {
			problem = derr.Error()
		} else {
			problem = rec.check()
		}
		if start == nil {
			switch {
			case problem != "":
				return nil, fmt.Errorf("%s:%d: %w: %s", path, n, ErrNotJournal, problem)
			case rec.Record != RecordStart:
				return nil, fmt.Errorf("%s:%d: %w: the first record is %q, not %q", path, n, ErrNotJournal, rec.Record, RecordStart)
			case rec.Start.Format != JournalFormat:
				return nil, fmt.Errorf("%s:%d: %w: format %d, this simctl reads format %d", path, n, ErrNotJournal, rec.Start.Format, JournalFormat)
			}
			start = rec.Start
			continue
		}
		if problem != "" {
			if cut {
				problems = append(problems, fmt.Sprintf("%s:%d: record cut short (the run was killed while writing it), skipped: %s", path, n, problem))
			} else {
				problems = append(problems, fmt.Sprintf("%s:%d: unreadable record skipped: %s", path, n, problem))
			}
			continue
		}
		switch rec.Record {
		case RecordStart:
			problems = append(problems, fmt.Sprintf("%s:%d: second start record skipped", path, n))
		case RecordScenario:
			if i, ok := byName[rec.Scenario.Name]; ok {
				problems = append(problems, fmt.Sprintf("%s:%d: %s recorded a second time; the later result is kept", path, n, rec.Scenario.Name))
				done[i] = *rec.Scenario
				continue
			}
			byName[rec.Scenario.Name] = len(done)
			done = append(done, *rec.Scenario)
		case RecordEnd:
			end = rec.End
		}
	}
	if start == nil {
		return nil, fmt.Errorf("%s: %w: the file is empty", path, ErrNotJournal)
	}
	run := journalRun(start, done, end)
	run.Problems = problems
	return run, nil
}

// check says what is wrong with a decoded record, "" if nothing.
func (r *journalRecord) check() string {
	switch r.Record {
	case RecordStart:
		if r.Start == nil {
			return `start record without "start"`
		}
	case RecordScenario:
		if r.Scenario == nil || r.Scenario.Name == "" {
			return `scenario record without "scenario" or its name`
		}
	case RecordEnd:
		if r.End == nil {
			return `end record without "end"`
		}
	case "":
		return `no "record" field`
	default:
		return fmt.Sprintf("unknown record %q", r.Record)
	}
	return ""
}

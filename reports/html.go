package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/trainersim/trainersim/results"
)

//go:embed report.html.tmpl
var htmlTemplateText string

// htmlTemplate renders report.html. html/template escapes every string it
// is given: everything in a Run is untrusted text.
var htmlTemplate = template.Must(template.New("report.html").Parse(htmlTemplateText))

// htmlTime is how the page shows a point in time, in the time's own zone.
const htmlTime = "2006-01-02 15:04:05 MST"

// WriteHTML writes one self-contained HTML page (inline CSS, no JavaScript required, no external URLs).
//
// The page starts with the run's verdict, counts, duration and versions, a
// banner when the run was interrupted or did not finish (with the runs that
// never reported and the lines of report.jsonl that were skipped), a list
// of links to the failed steps
// and a summary table of scenarios, failed ones first. Each scenario then
// has a section with its steps in order; a failed step is outlined in red
// with its failure and its (-want +got) diff, - lines red and + lines green.
// Each write is a card with its actor, field manager, verb, target,
// resourceVersion before and after, the server's answer, the warnings it
// sent with it and what the server changed in what was sent; a refused
// write says whether it was expected, and the body sent is folded in a
// <details>. Before the steps,
// the scenario's timeline is drawn as an inline SVG (see timelineSVG).
// The scenario's final Pods close the section.
func WriteHTML(w io.Writer, run *results.Run) error {
	if run == nil {
		return fmt.Errorf("failed to write html report: %w", errNilRun)
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, newHTMLRun(run)); err != nil {
		return fmt.Errorf("failed to render html report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("failed to write html report: %w", err)
	}
	return nil
}

// htmlRun is what the template shows of a Run, formatted.
type htmlRun struct {
	Passed, Interrupted bool
	Unfinished          bool
	Verdict             string
	// Incomplete is Run.Incomplete; NotReported and Problems are the Run's.
	Incomplete         string
	NotReported        []string
	Problems           []string
	Total, PassedCount int
	FailedCount        int
	Started, Duration  string
	Cluster            string
	KubernetesVersion  string
	TrainerVersion     string
	JobSetVersion      string
	KueueVersion       string
	TrainerCheckout    string
	KueueCheckout      string
	// Shard, Shards and MissingShards are the Run's.
	Shard         string
	Shards        []string
	MissingShards []string
	FailedSteps   []htmlFailedStep
	// OrderDependent are the shaker's findings: a line and a replay each.
	OrderDependent        []htmlOrderDependent
	Scenarios             []htmlScenario
	StepCount, WriteCount int
	RefusedCount          int
}

// htmlOrderDependent is a scenario whose verdict changed between shaken
// runs.
type htmlOrderDependent struct {
	Line, Failure, Replay string
}

// htmlFailedStep is a link from the top of the page to a failed step.
type htmlFailedStep struct {
	ID, Scenario, Step, Failure string
}

type htmlScenario struct {
	ID          string
	Index       int
	Name, File  string
	Description string
	Labels      map[string]string
	Namespace   string
	Passed      bool
	Skipped     string
	Failure     string
	Started     string
	Duration    string
	StepsPassed int
	Steps       []htmlStep
	Pods        []results.Pod
	// Interleaving is the explored order of this run, if any.
	Interleaving *results.Interleaving
	// Order is Interleaving.Order for a person: "a › b › c".
	Order string
	// Timeline is the SVG picture of the timeline, empty without one.
	Timeline template.HTML
	// TimelineNotes say what the picture misses: dropped reactions,
	// watches that failed.
	TimelineNotes []string
}

type htmlStep struct {
	ID       string
	Index    int
	Name     string
	Kind     string
	Passed   bool
	Duration string
	Failure  string
	Diff     []htmlDiffLine
	Writes   []htmlWrite
	Owners   []results.EntryOwners
	// Order and Cases: the forced order of a concurrent group's writes and
	// the interleaving cases that matched it, for a person.
	Order, Cases string
}

// htmlDiffLine is one line of a diff; Class is "del", "add" or "".
type htmlDiffLine struct {
	Class, Text string
}

type htmlWrite struct {
	Index        int
	Actor        string
	FieldManager string
	Verb         string
	Target       string
	Offset       string
	Duration     string
	RVBefore     string
	RVAfter      string
	Status       string
	// Reason is the Status reason when it adds to Status.
	Reason  string
	Message string
	// Warnings are the server's warnings on the write, one line each.
	Warnings []string
	Refused  bool
	Expected bool
	// Class is the card's colour: ok, refused (as expected) or unexpected.
	Class string
	// Outcome says in words what happened and whether it was expected.
	Outcome string
	Body    string
	// Mutations are what the server changed, one line each.
	Mutations []htmlMutation
}

// htmlMutation is one FieldChange: the path and what happened to it.
type htmlMutation struct {
	Path, Kind, Change string
}

func newHTMLRun(run *results.Run) htmlRun {
	v := htmlRun{
		Passed:            run.Passed(),
		Interrupted:       run.Interrupted,
		Unfinished:        run.Unfinished,
		Incomplete:        run.Incomplete(),
		NotReported:       run.NotReported,
		Problems:          run.Problems,
		Total:             len(run.Scenarios),
		Started:           formatTime(run.Started),
		Duration:          formatDuration(run.Duration),
		Cluster:           run.Cluster,
		KubernetesVersion: run.KubernetesVersion,
		TrainerVersion:    run.TrainerVersion,
		JobSetVersion:     run.JobSetVersion,
		KueueVersion:      run.KueueVersion,
		TrainerCheckout:   run.TrainerCheckout,
		KueueCheckout:     run.KueueCheckout,
		Shard:             run.Shard,
		Shards:            run.Shards,
		MissingShards:     run.MissingShards,
	}
	for _, f := range run.OrderDependent() {
		v.OrderDependent = append(v.OrderDependent, htmlOrderDependent{Line: OrderDependentLine(f), Failure: f.Failure, Replay: orderDependentReplay(run, f)})
	}
	switch {
	case v.Passed:
		v.Verdict = "passed"
	case len(run.MissingShards) > 0:
		v.Verdict = "incomplete"
	case run.Unfinished:
		v.Verdict = "unfinished"
	case run.Interrupted:
		v.Verdict = "interrupted"
	default:
		v.Verdict = "failed"
	}
	for i := range run.Scenarios {
		sc := newHTMLScenario(i, &run.Scenarios[i])
		if sc.Passed {
			v.PassedCount++
		} else {
			v.FailedCount++
		}
		v.StepCount += len(sc.Steps)
		for _, st := range sc.Steps {
			v.WriteCount += len(st.Writes)
			for _, w := range st.Writes {
				if w.Refused {
					v.RefusedCount++
				}
			}
		}
		v.Scenarios = append(v.Scenarios, sc)
	}
	// Failed scenarios first; otherwise in the order they ran.
	sort.SliceStable(v.Scenarios, func(i, j int) bool {
		return !v.Scenarios[i].Passed && v.Scenarios[j].Passed
	})
	for _, sc := range v.Scenarios {
		for _, st := range sc.Steps {
			if !st.Passed {
				v.FailedSteps = append(v.FailedSteps, htmlFailedStep{ID: st.ID, Scenario: sc.Name, Step: st.Name, Failure: oneLine(st.Failure)})
			}
		}
		if !sc.Passed && sc.Failure != "" && allPassed(sc.Steps) {
			v.FailedSteps = append(v.FailedSteps, htmlFailedStep{ID: sc.ID, Scenario: sc.Name, Failure: oneLine(sc.Failure)})
		}
	}
	return v
}

func allPassed(steps []htmlStep) bool {
	for _, st := range steps {
		if !st.Passed {
			return false
		}
	}
	return true
}

func newHTMLScenario(i int, sc *results.Scenario) htmlScenario {
	v := htmlScenario{
		ID:          fmt.Sprintf("scenario-%d", i+1),
		Index:       i + 1,
		Name:        sc.Name,
		File:        sc.File,
		Description: strings.TrimSpace(sc.Description),
		Labels:      sc.Labels,
		Namespace:   sc.Namespace,
		Passed:      sc.Passed || sc.Skipped != "",
		Skipped:     sc.Skipped,
		Failure:     sc.Failure,
		Started:     formatTime(sc.Started),
		Duration:    formatDuration(sc.Duration),
		Pods:        sc.FinalPods,
	}
	if il := sc.Interleaving; il != nil {
		v.Interleaving = il
		v.Order = strings.Join(il.Order, " › ")
	}
	if tl := sc.Timeline; tl != nil {
		// timelineSVG escapes every string it draws.
		v.Timeline = template.HTML(timelineSVG(sc))
		if tl.Truncated {
			v.TimelineNotes = append(v.TimelineNotes, fmt.Sprintf("%d observed reactions beyond the cap were left out.", tl.Dropped))
		}
		v.TimelineNotes = append(v.TimelineNotes, tl.Problems...)
	}
	for j := range sc.Steps {
		st := &sc.Steps[j]
		if st.Passed {
			v.StepsPassed++
		}
		hs := htmlStep{
			ID:       fmt.Sprintf("%s-step-%d", v.ID, j+1),
			Index:    j + 1,
			Name:     st.Name,
			Kind:     st.Kind,
			Passed:   st.Passed,
			Duration: formatDuration(st.Duration),
			Failure:  strings.TrimRight(st.Failure, "\n"),
			Diff:     diffLines(st.Diff),
			Owners:   st.Owners,
			Order:    strings.Join(st.Order, " › "),
			Cases:    strings.Join(st.Cases, "; "),
		}
		for k := range st.Writes {
			hs.Writes = append(hs.Writes, newHTMLWrite(k, st, &st.Writes[k]))
		}
		v.Steps = append(v.Steps, hs)
	}
	return v
}

func newHTMLWrite(k int, st *results.Step, w *results.Write) htmlWrite {
	v := htmlWrite{
		Index:        k + 1,
		Actor:        w.Actor,
		FieldManager: w.FieldManager,
		Verb:         verbText(w),
		Target:       w.Target,
		Duration:     formatDuration(w.Duration),
		RVBefore:     orNone(w.ResourceVersionBefore),
		RVAfter:      orNone(w.ResourceVersionAfter),
		Status:       statusText(w.Status),
		Message:      w.Message,
		Warnings:     w.Warnings,
		Refused:      refused(w),
		Expected:     w.Expected,
		Body:         strings.TrimRight(w.Body, "\n"),
	}
	for _, m := range w.Mutations {
		hm := htmlMutation{Path: m.Path, Kind: m.Kind}
		switch m.Kind {
		case results.FieldAdded:
			hm.Change = m.Stored
		case results.FieldRemoved:
			hm.Change = "sent " + m.Sent
		default:
			hm.Change = m.Sent + " → " + m.Stored
		}
		v.Mutations = append(v.Mutations, hm)
	}
	// "409 Conflict (Conflict)" says it twice.
	if !strings.EqualFold(strings.ReplaceAll(w.Reason, " ", ""), strings.ReplaceAll(http.StatusText(w.Status), " ", "")) {
		v.Reason = w.Reason
	}
	if !st.Started.IsZero() && !w.Started.IsZero() {
		v.Offset = "+" + formatDuration(w.Started.Sub(st.Started))
	}
	switch {
	case v.Refused && w.Expected:
		v.Class, v.Outcome = "refused", "refused, as expected"
	case v.Refused:
		v.Class, v.Outcome = "unexpected", "refused, NOT expected"
	case w.Expected:
		v.Class, v.Outcome = "ok", "accepted"
	default:
		v.Class, v.Outcome = "unexpected", "accepted, but an error was expected"
	}
	return v
}

// diffLines splits a go-cmp style diff into lines marked by their first
// column: "-" is what was wanted and is missing, "+" is what was got.
func diffLines(diff string) []htmlDiffLine {
	diff = strings.TrimRight(diff, "\n")
	if diff == "" {
		return nil
	}
	var lines []htmlDiffLine
	for _, l := range strings.Split(diff, "\n") {
		l = strings.TrimSuffix(l, "\r")
		var class string
		switch {
		case strings.HasPrefix(l, "-"):
			class = "del"
		case strings.HasPrefix(l, "+"):
			class = "add"
		}
		lines = append(lines, htmlDiffLine{Class: class, Text: l})
	}
	return lines
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(htmlTime)
}

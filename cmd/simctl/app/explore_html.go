package app

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/trainersim/trainersim/sim/explore"
)

// explore.html: what explore.json holds, for a person: the counts, each
// finding with what differed and its replay line, the scenarios not
// explored, and every plan's verdict. Self-contained (no script, no
// stylesheet to fetch), as report.html.

// exploreFinding is a plan run that found something, as the page shows it.
type exploreFinding struct {
	Run    exploredRun
	Status string // confirmed, known, or not confirmed (a false positive)
	Replay string // the replay line of a confirmed finding's file
}

// exploreHTML is the page's data.
type exploreHTML struct {
	Report   exploreReport
	Counts   []exploreCount
	Findings []exploreFinding
	Files    []string // the scenarios not explored, sorted
}

type exploreCount struct {
	What string
	N    int
}

// writeExploreHTML writes explore.html of a report.
func writeExploreHTML(w io.Writer, r exploreReport) error {
	verdicts := map[string]int{}
	page := exploreHTML{Report: r}
	confirmed, known, unconfirmed := 0, 0, 0
	for _, run := range r.Run {
		verdicts[run.Verdict.Kind]++
		if run.Confirm == nil {
			continue
		}
		f := exploreFinding{Run: run}
		switch {
		case run.Confirm.Scenario != "":
			confirmed++
			f.Status, f.Replay = "confirmed", "simctl run "+run.Confirm.Scenario
		case run.Confirm.Known != "":
			known++
			f.Status = "confirmed, known: " + run.Confirm.Known
		default:
			unconfirmed++
			f.Status = fmt.Sprintf("not confirmed (a false positive): %d of %d runs ended the same way", run.Confirm.Same, run.Confirm.Runs)
		}
		page.Findings = append(page.Findings, f)
	}
	page.Counts = []exploreCount{
		{"plans of the scenarios explored", r.Plans}, {"run", len(r.Run)}, {"down plans merged", r.Merged},
		{"same as written", verdicts[explore.Same]}, {"refused while down", verdicts[explore.Closed]},
		{"not carried out", verdicts[explore.NotCarriedOut]}, {"found", verdicts[explore.Found]},
		{"confirmed", confirmed}, {"known", known}, {"not confirmed (false positives)", unconfirmed},
	}
	for f := range r.NotExplored {
		page.Files = append(page.Files, f)
	}
	slices.Sort(page.Files)
	return exploreTemplate.Execute(w, page)
}

var exploreTemplate = template.Must(template.New("explore.html").Funcs(template.FuncMap{
	"time":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"duration": func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>simctl explore</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.found{color:#b00020}.same{color:#1b5e20}pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;margin:.3em 0}
code{background:#f6f6f6;padding:0 .2em}
</style></head><body>
<h1>simctl explore</h1>
<p>Started {{time .Report.Started}}, took {{duration .Report.Duration}}{{if .Report.Interrupted}}, <strong>interrupted</strong> before every plan ran{{end}}.</p>
<table>{{range .Counts}}<tr><th>{{.What}}</th><td>{{.N}}</td></tr>{{end}}</table>
<h2>Findings</h2>
{{if not .Findings}}<p>None: every plan run ended as its scenario does, was refused while its component was down, or was not carried out.</p>{{end}}
{{range .Findings}}<section>
<h3 class="found">{{.Run.Does}}</h3>
<p>Scenario <code>{{.Run.File}}</code>, plan <code>{{.Run.Plan}}</code>: {{.Status}}.</p>
{{if .Run.Verdict.FailedStep}}<p>Failed at step <code>{{.Run.Verdict.FailedStep}}</code>:</p><pre>{{.Run.Verdict.Failure}}</pre>{{end}}
{{if .Run.Verdict.Differences}}<table><tr><th>the end state's</th><th>the plan's run</th><th>the scenario as written</th></tr>
{{range .Run.Verdict.Differences}}<tr><td>{{.Key}}</td><td>{{or .Got "none"}}</td><td>{{or .Want "none"}}</td></tr>{{end}}</table>{{end}}
{{with .Run.Confirm}}{{range .Others}}<p>A confirmation run ended otherwise: {{.}}</p>{{end}}{{end}}
{{if .Replay}}<p>Replay: <code>{{.Replay}}</code></p>{{end}}
{{with .Run.Confirm}}{{if .Minimized}}<p>Shortened by simctl minimize: <code>simctl run {{.Minimized}}</code></p>{{end}}{{if .MinimizeProblem}}<p>Minimize: {{.MinimizeProblem}}</p>{{end}}{{end}}
</section>{{end}}
{{if .Files}}<h2>Not explored</h2><table>{{range .Files}}<tr><td><code>{{.}}</code></td><td>{{index $.Report.NotExplored .}}</td></tr>{{end}}</table>{{end}}
<h2>Every plan run</h2>
<table><tr><th>plan</th><th>what it does</th><th>verdict</th><th>took</th></tr>
{{range .Report.Run}}<tr><td><code>{{.Plan}}</code></td><td>{{.Does}}</td><td class="{{if eq .Verdict.Kind "found"}}found{{else if eq .Verdict.Kind "same"}}same{{end}}">{{.Verdict.Kind}}{{if .Verdict.FailedStep}} at <code>{{.Verdict.FailedStep}}</code>{{end}}</td><td>{{duration .Duration}}</td></tr>{{end}}
</table>
</body></html>
`))

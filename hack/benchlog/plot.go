package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Target is a figure the README's Speed table promises.
type Target struct {
	// File is the plot's file name in the report directory, without .svg.
	File string
	// Benchmark and Metric name the figure in the log.
	Benchmark, Metric string
	// Title says what the figure is, Unit what its value counts.
	Title, Unit string
	// Max is the most the figure may be.
	Max float64
}

// targets are the figures make bench-report draws, one plot each.
var targets = []Target{
	{File: "start-ratio", Benchmark: "Start", Metric: "full/bare", Title: "start: full harness / bare envtest", Unit: "ratio", Max: 1.3},
	{File: "corpus-critical-path", Benchmark: "Corpus", Metric: "critical-path-ratio", Title: "the corpus / (start + its longest scenario alone)", Unit: "ratio", Max: 1.1},
	{File: "cpu-per-run", Benchmark: "Corpus", Metric: "cpu-s/scenario", Title: "CPU per scenario run, every process", Unit: "s", Max: 0.2},
	{File: "views-cpu-ratio", Benchmark: "CorpusViews", Metric: "all-views-cpu-ratio", Title: "CPU with every component viewable / without views", Unit: "ratio", Max: 1.1},
	{File: "warm-rerun", Benchmark: "WarmRerun", Metric: "rerun-s", Title: "warm re-run on a kept cluster", Unit: "s", Max: 2},
	{File: "fleet", Benchmark: "Scale", Metric: "largest-to-running-s", Title: "1,000 nodes, 500 TrainJobs: every Pod Running", Unit: "s", Max: 600},
}

// point is one measurement of a target's figure.
type point struct {
	label string // the date and the commit, as its tooltip says
	value float64
}

// points returns the target's figures in the log's order.
func (t Target) points(log []Record) []point {
	var out []point
	for _, r := range log {
		if r.Benchmark != t.Benchmark || r.Metric != t.Metric {
			continue
		}
		commit := r.Commit
		if len(commit) > 7 {
			commit = commit[:7]
		}
		if r.Dirty {
			commit += "+changes"
		}
		out = append(out, point{label: fmt.Sprintf("%s %s on %s (%d CPUs)", r.Time.UTC().Format("2006-01-02 15:04"), commit, r.Host.Host, r.Host.CPUs), value: r.Value})
	}
	return out
}

// Plot geometry, in SVG user units.
const (
	plotW, plotH         = 560.0, 220.0
	padL, padR, padT, pb = 56.0, 16.0, 28.0, 28.0
)

// svg draws the target's figures over their runs, oldest left, with the
// target as a dashed line; a figure over it is red.
func (t Target) svg(pts []point) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13">%s (%s; target at most %s)</text>`+"\n", padL, html.EscapeString(t.Title), t.Unit, trim(t.Max))
	top := t.Max
	for _, p := range pts {
		top = math.Max(top, p.value)
	}
	top = niceCeil(top * 1.1)
	y := func(v float64) float64 { return padT + (plotH-padT-pb)*(1-v/top) }
	x := func(i int) float64 {
		if len(pts) < 2 {
			return padL + (plotW-padL-padR)/2
		}
		return padL + (plotW-padL-padR)*float64(i)/float64(len(pts)-1)
	}
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", padL, plotW-padR, y(v), y(v), padL-6, y(v)+4, trim(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="6 4"/><text x="%.1f" y="%.1f" fill="#c00" text-anchor="end">target</text>`+"\n", padL, plotW-padR, y(t.Max), y(t.Max), plotW-padR, y(t.Max)-4)
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">no run of make bench has measured it yet</text>`+"\n", plotW/2, plotH/2)
	}
	if len(pts) > 1 {
		var line []string
		for i, p := range pts {
			line = append(line, fmt.Sprintf("%.1f,%.1f", x(i), y(p.value)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#36c" points="%s"/>`+"\n", strings.Join(line, " "))
	}
	for i, p := range pts {
		color := "#36c"
		if p.value > t.Max {
			color = "#c00"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s</title></circle>`+"\n", x(i), y(p.value), color, html.EscapeString(p.label), trim(p.value))
	}
	if n := len(pts); n > 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">latest %s of %s runs of make bench</text>`+"\n", plotW-padR, plotH-8, trim(pts[n-1].value), fmt.Sprint(n))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// trim formats a figure with at most three significant decimals.
func trim(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

func TestTimelineSVGGolden(t *testing.T) {
	run := testRun()
	var b bytes.Buffer
	for i := range run.Scenarios {
		b.WriteString(timelineSVG(&run.Scenarios[i]))
		b.WriteString("\n")
	}
	golden(t, "timeline.svg", b.Bytes())
}

// svgElement is an element of a drawn timeline, as the tests look at it.
type svgElement struct {
	name  string
	attrs map[string]string
	title string // the text of its <title> child
	text  string // its own text
}

// parseSVG decodes every token of an SVG document, failing the test when
// it is not well-formed XML, and returns its elements in document order.
func parseSVG(t *testing.T, svg string) []*svgElement {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var all, stack []*svgElement
	inTitle := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("timeline SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "title" {
				inTitle = true
				continue
			}
			e := &svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			all, stack = append(all, e), append(stack, e)
		case xml.EndElement:
			if tok.Name.Local == "title" {
				inTitle = false
				continue
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			switch {
			case len(stack) == 0:
			case inTitle:
				stack[len(stack)-1].title += string(tok)
			default:
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if len(all) == 0 || all[0].name != "svg" {
		t.Fatalf("timeline SVG has no <svg> root:\n%s", svg)
	}
	return all
}

// checkTimelineSVG checks what every drawn timeline must satisfy: one bar
// per write and one mark per reaction, each with the entry's summary in
// its tooltip, every coordinate a finite number inside the picture, and
// no two write bars of one row on top of each other unless full says that
// a lane has more than svgMaxRows rows of them.
func checkTimelineSVG(t *testing.T, sc *results.Scenario, full bool) []*svgElement {
	t.Helper()
	svg := timelineSVG(sc)
	els := parseSVG(t, svg)
	root := els[0]
	width, _ := strconv.ParseFloat(root.attrs["width"], 64)
	height, err := strconv.ParseFloat(root.attrs["height"], 64)
	if err != nil || width != svgWidth || height <= 0 {
		t.Errorf("svg width=%q height=%q, want %d and a positive height", root.attrs["width"], root.attrs["height"], svgWidth)
	}
	var titles []string
	type box struct{ x0, x1, y float64 }
	var boxes []box
	for _, e := range els {
		for _, k := range []string{"x", "y", "width", "height", "cx", "cy", "r", "x1", "x2", "y1", "y2"} {
			v, ok := e.attrs[k]
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < -20 || f > width+20 || strings.HasPrefix(k, "y") && f > height {
				t.Errorf("<%s> has %s=%q, want a number inside the %gx%g picture", e.name, k, v, width, height)
			}
		}
		class := e.attrs["class"]
		if class != "tl-write" && class != "tl-mark" {
			continue
		}
		titles = append(titles, e.title)
		if class == "tl-write" {
			x, _ := strconv.ParseFloat(e.attrs["x"], 64)
			w, _ := strconv.ParseFloat(e.attrs["width"], 64)
			y, _ := strconv.ParseFloat(e.attrs["y"], 64)
			if w < svgMinBar {
				t.Errorf("write bar %q is %g wide, want at least %d", e.title, w, svgMinBar)
			}
			boxes = append(boxes, box{x, x + w, y})
		}
	}
	var entries []results.TimelineEntry
	if sc.Timeline != nil {
		entries = sc.Timeline.Entries
	}
	if len(titles) != len(entries) {
		t.Fatalf("%d marks drawn, want one per entry: %d", len(titles), len(entries))
	}
	for i, e := range entries {
		// Runes XML forbids are shown as U+FFFD.
		if !strings.HasPrefix(titles[i], xmlSafe(e.Summary)+"\n") || (e.Detail != "" && !strings.HasSuffix(titles[i], xmlSafe(e.Detail))) {
			t.Errorf("mark %d tooltip = %q, want the summary %q and the detail %q", i, titles[i], e.Summary, e.Detail)
		}
	}
	// Write bars of one lane row do not overlap.
	for i := 0; i < len(boxes) && !full; i++ {
		for j := i + 1; j < len(boxes); j++ {
			a, b := boxes[i], boxes[j]
			if a.y == b.y && a.x0 < b.x1 && b.x0 < a.x1 {
				t.Errorf("write bars %d [%g,%g] and %d [%g,%g] overlap at y=%g", i, a.x0, a.x1, j, b.x0, b.x1, a.y)
			}
		}
	}
	return els
}

func TestTimelineSVG(t *testing.T) {
	run := testRun()
	for i := range run.Scenarios {
		t.Run(run.Scenarios[i].Name, func(t *testing.T) {
			checkTimelineSVG(t, &run.Scenarios[i], false)
		})
	}

	t.Run("no entries", func(t *testing.T) {
		sc := &results.Scenario{Name: "empty", Started: at(0), Timeline: &results.Timeline{Lanes: []string{"trainer", "kwok"}}}
		els := checkTimelineSVG(t, sc, false)
		var texts []string
		for _, e := range els {
			if e.name == "text" && e.attrs["text-anchor"] == "end" {
				texts = append(texts, e.title)
			}
		}
		if diff := cmp.Diff([]string{"trainer", "kwok", ""}, texts); diff != "" {
			t.Errorf("lane labels mismatch (-want +got):\n%s", diff)
		}
		if !strings.Contains(timelineSVG(sc), ">nothing recorded</text>") {
			t.Errorf("an empty timeline does not say that nothing was recorded")
		}
	})

	t.Run("everything at the start, nothing lasting", func(t *testing.T) {
		sc := &results.Scenario{Name: "instant", Started: at(0), Steps: []results.Step{{Name: "a", Started: at(0), Passed: true}, {Name: "b", Started: at(0)}},
			Timeline: &results.Timeline{Lanes: []string{"sdk", "kwok"}}}
		for i := range 10 {
			sc.Timeline.Entries = append(sc.Timeline.Entries,
				results.TimelineEntry{At: at(0), Lane: "sdk", Kind: results.EntryWrite, Summary: fmt.Sprintf("write %d", i), Status: 200},
				results.TimelineEntry{At: at(0), Lane: "kwok", Kind: results.EntryPodPhase, Summary: fmt.Sprintf("phase %d", i)},
			)
		}
		els := checkTimelineSVG(t, sc, true)
		rows := map[string]bool{}
		for _, e := range els {
			if e.attrs["class"] == "tl-write" {
				rows[e.attrs["y"]] = true
			}
		}
		if len(rows) != svgMaxRows {
			t.Errorf("10 writes at one instant drawn in %d rows, want %d", len(rows), svgMaxRows)
		}
		// The axis covers a second.
		var ticks []string
		for _, e := range els {
			if e.name == "text" && e.attrs["text-anchor"] == "middle" {
				ticks = append(ticks, e.text)
			}
		}
		want := []string{"0.0s", "0.1s", "0.2s", "0.3s", "0.4s", "0.5s", "0.6s", "0.7s", "0.8s", "0.9s", "1.0s"}
		if diff := cmp.Diff(want, ticks); diff != "" {
			t.Errorf("tick labels mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("one very long step", func(t *testing.T) {
		sc := &results.Scenario{Name: "long", Started: at(0), Duration: 61 * time.Second,
			Steps: []results.Step{
				{Name: "create", Started: at(10 * time.Millisecond), Duration: 5 * time.Millisecond, Passed: true},
				{Name: "apply", Started: at(16 * time.Millisecond), Duration: 5 * time.Millisecond, Passed: true},
				{Name: "wait a minute", Started: at(22 * time.Millisecond), Duration: 60 * time.Second},
			},
			Timeline: &results.Timeline{Lanes: []string{"sdk"}, Entries: []results.TimelineEntry{
				{At: at(11 * time.Millisecond), Duration: 4 * time.Millisecond, Lane: "sdk", Kind: results.EntryWrite, Summary: "create", Status: 201},
				{At: at(17 * time.Millisecond), Duration: 4 * time.Millisecond, Lane: "sdk", Kind: results.EntryWrite, Summary: "apply", Status: 500},
				{At: at(59 * time.Second), Lane: "events", Kind: "something-new", Summary: "a kind this version does not know"},
			}},
		}
		els := checkTimelineSVG(t, sc, false)
		var steps, gaps []string
		var ticks []float64
		for _, e := range els {
			switch {
			case e.name == "text" && strings.HasPrefix(e.title, "step "):
				steps = append(steps, e.title[:strings.IndexByte(e.title, '\n')])
			case e.attrs["class"] == "tl-gap":
				gaps = append(gaps, e.title)
			case e.name == "text" && e.attrs["text-anchor"] == "middle" && e.attrs["font-style"] == "":
				x, _ := strconv.ParseFloat(e.attrs["x"], 64)
				ticks = append(ticks, x)
			}
		}
		// Three steps within 12ms: the labels are staggered, none dropped.
		if diff := cmp.Diff([]string{"step 1: create", "step 2: apply", "step 3: wait a minute"}, steps); diff != "" {
			t.Errorf("step labels mismatch (-want +got):\n%s", diff)
		}
		// Nothing happens from the end of the third write to the last
		// entry: the axis skips it.
		if diff := cmp.Diff([]string{"nothing recorded for 58.978s: the axis skips from +22ms to +59s"}, gaps); diff != "" {
			t.Errorf("breaks mismatch (-want +got):\n%s", diff)
		}
		for i := 1; i < len(ticks); i++ {
			if ticks[i]-ticks[i-1] < svgTickLabelGap {
				t.Errorf("tick labels at x=%g and x=%g are closer than %g", ticks[i-1], ticks[i], svgTickLabelGap)
			}
		}
		if len(ticks) < 3 || len(ticks) > 12 {
			t.Errorf("%d tick labels, want 3 to 12", len(ticks))
		}
	})

	t.Run("hostile strings", func(t *testing.T) {
		sc := &hostileRun().Scenarios[0]
		svg := timelineSVG(sc)
		if strings.Contains(strings.ToLower(svg), "<script") {
			t.Errorf("timeline SVG contains an unescaped <script>")
		}
		checkTimelineSVG(t, sc, false)
	})

	t.Run("no timeline", func(t *testing.T) {
		checkTimelineSVG(t, &results.Scenario{Name: "old report"}, false)
	})
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct {
		span  time.Duration
		step  time.Duration
		label string // of the tick at one step
	}{
		{span: time.Millisecond, step: time.Millisecond, label: "0.001s"},
		{span: 30 * time.Millisecond, step: 5 * time.Millisecond, label: "0.005s"},
		{span: time.Second, step: 100 * time.Millisecond, label: "0.1s"},
		{span: 2300 * time.Millisecond, step: 250 * time.Millisecond, label: "0.25s"},
		{span: 7 * time.Second, step: time.Second, label: "1s"},
		{span: 31 * time.Second, step: 5 * time.Second, label: "5s"},
		{span: 5 * time.Minute, step: 30 * time.Second, label: "30s"},
		{span: 15 * time.Minute, step: 2 * time.Minute, label: "2m0s"},
		{span: 20 * time.Hour, step: 2 * time.Hour, label: "2h0m0s"},
	} {
		step := tickStep(tc.span)
		if step != tc.step {
			t.Errorf("tickStep(%v) = %v, want %v", tc.span, step, tc.step)
		}
		if got := tickLabel(step, step); got != tc.label {
			t.Errorf("tickLabel(%v) = %q, want %q", step, got, tc.label)
		}
	}
}

func TestTimeAxis(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name   string
		span   time.Duration
		points []time.Duration
		right  float64
		want   []axisSegment
		ticks  []string
	}{
		{
			name: "busy all along: linear, span rounded up to a tick",
			span: ms(2300), points: []time.Duration{ms(300), ms(1000), ms(2300)},
			want:  []axisSegment{{from: 0, to: ms(2500), x0: 100, x1: 600}},
			ticks: []string{"0.00s", "0.25s", "0.50s", "0.75s", "1.00s", "1.25s", "1.50s", "1.75s", "2.00s", "2.25s", "2.50s"},
		},
		{
			name: "nothing from 2s to 32s: a break",
			span: ms(32000), points: []time.Duration{ms(300), ms(1500), ms(2000), ms(32000)},
			want: []axisSegment{
				{from: 0, to: ms(2000), x0: 100, x1: 100 + 500 - svgGapWidth},
				{from: ms(2000), to: ms(32000), x0: 100 + 500 - svgGapWidth, x1: 600, gap: true},
			},
			ticks: []string{"0.0s", "0.2s", "0.4s", "0.6s", "0.8s", "1.0s", "1.2s", "1.4s", "1.6s", "1.8s", "2.0s", "32.0s"},
		},
		{
			name: "a break between two busy stretches",
			span: ms(20000), points: []time.Duration{ms(1000), ms(19000)},
			want: []axisSegment{
				{from: 0, to: ms(1000), x0: 100, x1: 100 + (500-svgGapWidth)/2},
				{from: ms(1000), to: ms(19000), x0: 100 + (500-svgGapWidth)/2, x1: 100 + (500+svgGapWidth)/2, gap: true},
				{from: ms(19000), to: ms(20000), x0: 100 + (500+svgGapWidth)/2, x1: 600},
			},
			ticks: []string{"0.0s", "0.2s", "0.4s", "0.6s", "0.8s", "1.0s", "19.0s", "19.2s", "19.4s", "19.6s", "19.8s", "20.0s"},
		},
		{
			name: "everything at one instant, long after: too little left to break",
			span: ms(30000), points: []time.Duration{0, 0, ms(30000)},
			want:  []axisSegment{{from: 0, to: ms(30000), x0: 100, x1: 600}},
			ticks: []string{"0s", "5s", "10s", "15s", "20s", "25s", "30s"},
		},
		{
			name: "ticks too close for every label", right: 300,
			want:  []axisSegment{{from: 0, to: time.Second, x0: 100, x1: 300}},
			ticks: []string{"0.0s", "", "0.2s", "", "0.4s", "", "0.6s", "", "0.8s", "", "1.0s"},
		},
		{
			name:  "nothing at all",
			want:  []axisSegment{{from: 0, to: time.Second, x0: 100, x1: 600}},
			ticks: []string{"0.0s", "0.1s", "0.2s", "0.3s", "0.4s", "0.5s", "0.6s", "0.7s", "0.8s", "0.9s", "1.0s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			right := tc.right
			if right == 0 {
				right = 600
			}
			a := newTimeAxis(at(0), tc.span, tc.points, 100, right)
			if diff := cmp.Diff(tc.want, a.segs, cmp.AllowUnexported(axisSegment{})); diff != "" {
				t.Errorf("segments mismatch (-want +got):\n%s", diff)
			}
			var labels []string
			for _, tk := range a.ticks() {
				labels = append(labels, tk.label)
			}
			if diff := cmp.Diff(tc.ticks, labels); diff != "" {
				t.Errorf("tick labels mismatch (-want +got):\n%s", diff)
			}
			// x grows with time and stays on the axis.
			last := math.Inf(-1)
			for d := time.Duration(-1); d <= tc.span+time.Second; d += tc.span/97 + time.Millisecond {
				x := a.x(at(d))
				if x < last || x < 100 || x > right {
					t.Fatalf("x(%v) = %g after %g, want a growing x in [100, %g]", d, x, last, right)
				}
				last = x
			}
		})
	}
}

func TestLayoutStepLabels(t *testing.T) {
	steps := []results.Step{{Name: "the SDK creates the suspended job"}, {Name: "Kueue applies"}, {Name: "Kueue resumes"}, {Name: "wait"}, {Name: "x"}, {Name: "the last step of all"}}
	// Five steps within 20px, the last 100px from the right edge.
	got := layoutStepLabels(steps, []float64{200, 205, 210, 214, 219, 1000}, 1100)
	want := []stepLabel{
		{text: "1", row: 0},                // step 5 follows it 19px on
		{text: "2. Kueue applies", row: 1}, // step 6 follows it far on
		{text: "3. Kueue resumes", row: 2}, // nothing follows it
		{text: "4", row: -1},               // no row has room for a number
		{text: "5. x", row: 0},             // the row whose label ended first
		{text: "6. the last s…", row: 1},   // cut at the right edge
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(stepLabel{})); diff != "" {
		t.Errorf("step labels mismatch (-want +got):\n%s", diff)
	}
}

func TestPlaceInRow(t *testing.T) {
	var rows []float64
	var got []int
	for _, x := range []float64{0, 5, 5, 20, 20, 20, 20, 20, 20, 20} {
		got = append(got, placeInRow(&rows, x, x+10))
	}
	// 0 and 5 overlap; 20 fits after both; beyond svgMaxRows rows, the
	// row that ends first takes it.
	want := []int{0, 1, 2, 0, 1, 2, 3, 4, 5, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteOf(t *testing.T) {
	sc := &results.Scenario{
		Setup: []results.Write{{Target: "setup 0"}},
		Steps: []results.Step{{Writes: []results.Write{{Target: "step 0 write 0"}, {Target: "step 0 write 1"}}}},
	}
	for _, tc := range []struct {
		ref  *results.WriteRef
		want string
	}{
		{ref: &results.WriteRef{Index: 0, Setup: true}, want: "setup 0"},
		{ref: &results.WriteRef{Step: 0, Index: 1}, want: "step 0 write 1"},
		{ref: &results.WriteRef{Index: 1, Setup: true}},
		{ref: &results.WriteRef{Step: 1, Index: 0}},
		{ref: nil},
	} {
		got := ""
		if w := writeOf(sc, tc.ref); w != nil {
			got = w.Target
		}
		if got != tc.want {
			t.Errorf("writeOf(%+v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

package reports

import (
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trainersim/trainersim/results"
)

// Geometry of the timeline picture, in SVG user units (pixels at 100%).
const (
	svgWidth      = 1100
	svgLabelWidth = 170 // lane labels, left of the plot
	svgRightPad   = 24
	svgRowHeight  = 14 // one row of marks in a lane
	svgLanePad    = 5  // above and below a lane's rows
	svgMaxRows    = 6  // rows of one lane; beyond, marks overlap
	svgStepRow    = 15 // one row of step labels
	svgStepRows   = 3
	svgAxisHeight = 40
	svgLegendRow  = 20
	svgCharWidth  = 6.4 // estimated width of a character at font-size 11
	svgMarkRadius = 5
	svgMinBar     = 4 // narrowest write bar
	svgMarkGap    = 2 // room kept between marks of one row
)

// Colours of the picture.
const (
	colOK        = "#2da44e"
	colConflict  = "#e16f24"
	colRefused   = "#cf222e"
	colJobSet    = "#8250df"
	colJob       = "#0969da"
	colPod       = "#1b7c83"
	colPhase     = "#1a7f37"
	colTrainJob  = "#bf8700"
	colPodGroup  = "#953800"
	colEvent     = "#6e7781"
	colWarning   = "#d1242f"
	colText      = "#1f2328"
	colMuted     = "#59636e"
	colGrid      = "#e6eaef"
	colLaneOdd   = "#f6f8fa"
	colStepBand  = "#f3f0ff"
	colStepLine  = "#a8a3c7"
	colFailed    = "#cf222e"
	colUnknown   = "#8c959f"
	colGap       = "#eceff3"
	svgFontStack = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
)

// Shapes of the marks of observed reactions.
const (
	shapeCircle   = "circle"   // created
	shapeCross    = "cross"    // deleted
	shapeDiamond  = "diamond"  // spec changed
	shapePause    = "pause"    // suspended
	shapePlay     = "play"     // resumed
	shapeTriangle = "triangle" // bound to a node
	shapeSquare   = "square"   // a phase reached
	shapeHollow   = "hollow"   // not scheduled
	shapeRing     = "ring"     // a condition
	shapeTick     = "tick"     // an event
	shapeBar      = "bar"      // a write, legend only
)

// markStyle is how the marks of one kind of entry look.
type markStyle struct {
	shape, color, label string
}

// markStyles by entry kind, in legend order.
var markStyles = []struct {
	kind string
	markStyle
}{
	{results.EntryTrainJobCondition, markStyle{shapeRing, colTrainJob, "TrainJob condition"}},
	{results.EntryJobSetCreated, markStyle{shapeCircle, colJobSet, "JobSet created"}},
	{results.EntryJobSetChanged, markStyle{shapeDiamond, colJobSet, "JobSet spec changed"}},
	{results.EntryJobSetSuspended, markStyle{shapePause, colJobSet, "JobSet suspended"}},
	{results.EntryJobSetResumed, markStyle{shapePlay, colJobSet, "JobSet resumed"}},
	{results.EntryJobSetDeleted, markStyle{shapeCross, colJobSet, "JobSet deleted"}},
	{results.EntryPodGroupCreated, markStyle{shapeCircle, colPodGroup, "PodGroup created"}},
	{results.EntryPodGroupPhase, markStyle{shapeRing, colPodGroup, "PodGroup phase"}},
	{results.EntryJobCreated, markStyle{shapeCircle, colJob, "Job created"}},
	{results.EntryJobSuspended, markStyle{shapePause, colJob, "Job suspended"}},
	{results.EntryJobResumed, markStyle{shapePlay, colJob, "Job resumed"}},
	{results.EntryJobCondition, markStyle{shapeRing, colJob, "Job condition"}},
	{results.EntryJobDeleted, markStyle{shapeCross, colJob, "Job deleted"}},
	{results.EntryPodCreated, markStyle{shapeCircle, colPod, "Pod created"}},
	{results.EntryPodBound, markStyle{shapeTriangle, colPod, "Pod bound to a node"}},
	{results.EntryPodUnschedulable, markStyle{shapeHollow, colWarning, "Pod not scheduled"}},
	{results.EntryPodPhase, markStyle{shapeSquare, colPhase, "Pod phase"}},
	{results.EntryPodDeleted, markStyle{shapeCross, colPod, "Pod deleted"}},
	{results.EntryRequestHeld, markStyle{shapePause, colWarning, "request held by a gate"}},
	{results.EntryEventKeptBack, markStyle{shapeHollow, colMuted, "watch event kept back by a view"}},
	{results.EntryListServedStale, markStyle{shapeRing, colMuted, "list served stale by a view"}},
	{results.EntryUpgradePart, markStyle{shapeSquare, colTrainJob, "part of a Trainer upgrade"}},
	{results.EntryEvent, markStyle{shapeTick, colEvent, "event"}},
	{results.EntryWarningEvent, markStyle{shapeTick, colWarning, "warning event"}},
}

func styleOf(kind string) markStyle {
	for _, s := range markStyles {
		if s.kind == kind {
			return s.markStyle
		}
	}
	return markStyle{shapeCircle, colUnknown, kind}
}

// writeColor is the colour of a write's bar: green for 2xx, orange for a
// 409 Conflict, red for any other refusal or no answer.
func writeColor(status int) string {
	switch {
	case status >= 200 && status < 300:
		return colOK
	case status == 409:
		return colConflict
	default:
		return colRefused
	}
}

// Legend labels of the write bars.
const (
	legendWriteOK       = "write accepted (2xx)"
	legendWriteConflict = "write 409 Conflict"
	legendWriteRefused  = "write refused"
	legendUnexpected    = "outcome not expected"
)

// timelineSVG draws a scenario's timeline as an inline SVG element (no
// namespace attribute, no script, no external reference).
//
// One horizontal lane per Timeline lane, labelled on the left; x is the
// time since the scenario started, with tick labels under the lanes. Each
// step's span is a band with a faint line at its start, numbered at the
// top (labels are staggered over three rows, then left to the band's
// tooltip). A write is a bar from when it was sent to when it was
// answered, at least a few pixels wide: green 2xx, orange 409, red for
// other refusals, outlined in black when the outcome was not the one the
// step expected. Each reaction is a small mark whose shape says what
// happened (created, deleted, changed, suspended, resumed, bound, not
// scheduled, phase, condition, event) and whose colour says to what. Marks
// that would overlap in a lane go to further rows of it. Every mark, band
// and label has a <title> tooltip with the whole summary and detail. A
// legend lists the kinds of marks drawn.
func timelineSVG(sc *results.Scenario) string {
	tl := sc.Timeline
	if tl == nil {
		tl = &results.Timeline{}
	}
	origin := sc.Started
	if origin.IsZero() && len(tl.Entries) > 0 {
		origin = tl.Entries[0].At
	}
	// The span: the scenario, and anything drawn past its end. The
	// points are where something is drawn: entries and step starts (the
	// end of a step that waits is not worth the room).
	span := sc.Duration
	var points []time.Duration
	for _, e := range tl.Entries {
		points = append(points, e.At.Sub(origin), e.At.Add(e.Duration).Sub(origin))
	}
	for _, st := range sc.Steps {
		points = append(points, st.Started.Sub(origin))
		span = max(span, st.Started.Add(st.Duration).Sub(origin))
	}
	for _, p := range points {
		span = max(span, p)
	}
	plotLeft, plotRight := float64(svgLabelWidth), float64(svgWidth-svgRightPad)
	axis := newTimeAxis(origin, span, points, plotLeft, plotRight)
	xOf := axis.x

	// Marks, by lane, placed in rows.
	lanes := slices.Clone(tl.Lanes)
	for _, e := range tl.Entries {
		if !slices.Contains(lanes, e.Lane) {
			lanes = append(lanes, e.Lane) // a lane the list forgot
		}
	}
	laneIndex := map[string]int{}
	for i, l := range lanes {
		laneIndex[l] = i
	}
	type mark struct {
		entry      *results.TimelineEntry
		x0, x1     float64 // the extent it occupies
		row        int
		unexpected bool
	}
	rowEnds := make([][]float64, len(lanes))
	marks := make([]mark, 0, len(tl.Entries))
	for i := range tl.Entries {
		e := &tl.Entries[i]
		m := mark{entry: e}
		x := xOf(e.At)
		if e.Kind == results.EntryWrite {
			m.x0, m.x1 = x, max(xOf(e.At.Add(e.Duration)), x+svgMinBar)
			if w := writeOf(sc, e.Write); w != nil && !w.Expected {
				m.unexpected = true
			}
		} else {
			m.x0, m.x1 = x-svgMarkRadius, x+svgMarkRadius
		}
		li := laneIndex[e.Lane]
		m.row = placeInRow(&rowEnds[li], m.x0, m.x1)
		marks = append(marks, m)
	}

	// Vertical layout: step labels, lanes, axis, legend.
	stepTop := 4.0
	lanesTop := stepTop + svgStepRows*svgStepRow + 6
	laneTops := make([]float64, len(lanes)+1)
	y := lanesTop
	for i := range lanes {
		laneTops[i] = y
		y += float64(max(1, len(rowEnds[i])))*svgRowHeight + 2*svgLanePad
	}
	laneTops[len(lanes)] = y
	lanesBottom := y
	if len(lanes) == 0 {
		lanesBottom = lanesTop + svgRowHeight + 2*svgLanePad
	}
	legend := legendItems(tl, sc)
	legendRows := layoutLegend(legend, plotRight-plotLeft)
	height := lanesBottom + svgAxisHeight + float64(legendRows)*svgLegendRow + 8

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %d %s" width="%d" height="%s" role="img" aria-label="%s" font-family="%s" font-size="11">`+"\n",
		svgWidth, num(height), svgWidth, num(height), esc("timeline of "+sc.Name+": "+strconv.Itoa(len(tl.Entries))+" entries"), svgFontStack)

	// Step bands, alternately shaded, and their start lines.
	stepXs := make([]float64, len(sc.Steps))
	for i, st := range sc.Steps {
		stepXs[i] = xOf(st.Started)
	}
	stepLabels := layoutStepLabels(sc.Steps, stepXs, float64(svgWidth))
	for i, st := range sc.Steps {
		x0 := xOf(st.Started)
		x1 := xOf(st.Started.Add(st.Duration))
		if i+1 < len(sc.Steps) {
			x1 = max(x1, xOf(sc.Steps[i+1].Started))
		}
		x1 = max(x1, x0+1)
		title := stepTitle(i, &st)
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`+"\n",
				num(x0), num(lanesTop), num(x1-x0), num(lanesBottom-lanesTop), colStepBand, esc(title))
		} else {
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" pointer-events="all"><title>%s</title></rect>`+"\n",
				num(x0), num(lanesTop), num(x1-x0), num(lanesBottom-lanesTop), esc(title))
		}
		color := colStepLine
		if !st.Passed {
			color = colFailed
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="3 3"/>`+"\n",
			num(x0), num(stepTop), num(x0), num(lanesBottom), color)
		if label, row := stepLabels[i].text, stepLabels[i].row; row >= 0 {
			textColor := colMuted
			if !st.Passed {
				textColor = colFailed
			}
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s"><title>%s</title>%s</text>`+"\n",
				num(x0+3), num(stepTop+float64(row+1)*svgStepRow-4), textColor, esc(title), esc(label))
		}
	}

	// Lanes: stripes, labels, grid.
	for i, l := range lanes {
		top, bottom := laneTops[i], laneTops[i+1]
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.6"/>`+"\n", num(top), num(plotLeft), num(bottom-top), colLaneOdd)
		}
		fmt.Fprintf(&b, `<line x1="0" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n", num(bottom), num(plotRight), num(bottom), colGrid)
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" fill="%s"><title>%s</title>%s</text>`+"\n",
			num(plotLeft-8), num(top+svgLanePad+svgRowHeight/2+4), colText, esc(l), esc(truncate(l, int((plotLeft-16)/svgCharWidth))))
	}
	if len(tl.Entries) == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="%s">nothing recorded</text>`+"\n",
			num((plotLeft+plotRight)/2), num((lanesTop+lanesBottom)/2+4), colMuted)
	}

	// The axis: a tick and a label every tick, a faint line through the
	// lanes; a break where nothing happens for long.
	axisY := lanesBottom + 4
	for _, seg := range axis.segs {
		if !seg.gap {
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n", num(seg.x0), num(axisY), num(seg.x1), num(axisY), colMuted)
			continue
		}
		skipped := seg.to - seg.from
		title := fmt.Sprintf("nothing recorded for %s: the axis skips from +%s to +%s", formatDuration(skipped), formatDuration(seg.from), formatDuration(seg.to))
		fmt.Fprintf(&b, `<rect class="tl-gap" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`+"\n",
			num(seg.x0+4), num(lanesTop), num(seg.x1-seg.x0-8), num(lanesBottom-lanesTop), colGap, esc(title))
		mid := (seg.x0 + seg.x1) / 2
		fmt.Fprintf(&b, `<path d="M%s %sl6 -8M%s %sl6 -8" stroke="%s" fill="none"/>`+"\n", num(mid-7), num(axisY+4), num(mid+1), num(axisY+4), colMuted)
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="%s" font-style="italic"><title>%s</title>%s</text>`+"\n",
			num(mid), num(axisY+26), colMuted, esc(title), esc("+"+gapLabel(skipped)))
	}
	for _, tk := range axis.ticks() {
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n", num(tk.x), num(lanesTop), num(tk.x), num(lanesBottom), colGrid)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n", num(tk.x), num(axisY), num(tk.x), num(axisY+4), colMuted)
		if tk.label != "" {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="%s">%s</text>`+"\n", num(tk.x), num(axisY+15), colMuted, esc(tk.label))
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" fill="%s">time since start</text>`+"\n", num(plotLeft-24), num(axisY+15), colMuted)

	// Marks, over everything else.
	for _, m := range marks {
		e := m.entry
		li := laneIndex[e.Lane]
		cy := laneTops[li] + svgLanePad + float64(m.row)*svgRowHeight + svgRowHeight/2
		title := esc(entryTitle(e, origin))
		if e.Kind == results.EntryWrite {
			stroke := ""
			if m.unexpected {
				stroke = ` stroke="#000" stroke-width="1.5"`
			}
			fmt.Fprintf(&b, `<rect class="tl-write" x="%s" y="%s" width="%s" height="%d" rx="2" fill="%s"%s><title>%s</title></rect>`+"\n",
				num(m.x0), num(cy-svgRowHeight/2+3), num(m.x1-m.x0), svgRowHeight-6, writeColor(e.Status), stroke, title)
			continue
		}
		s := styleOf(e.Kind)
		b.WriteString(shapeSVG(s.shape, s.color, (m.x0+m.x1)/2, cy, "tl-mark", title))
	}

	// The legend.
	drawLegend(&b, legend, plotLeft, lanesBottom+svgAxisHeight, plotRight-plotLeft)
	b.WriteString("</svg>")
	return b.String()
}

// writeOf returns the write a WriteRef locates, or nil.
func writeOf(sc *results.Scenario, ref *results.WriteRef) *results.Write {
	if ref != nil && ref.Setup {
		if ref.Index < 0 || ref.Index >= len(sc.Setup) {
			return nil
		}
		return &sc.Setup[ref.Index]
	}
	if ref == nil || ref.Step < 0 || ref.Step >= len(sc.Steps) {
		return nil
	}
	st := &sc.Steps[ref.Step]
	if ref.Index < 0 || ref.Index >= len(st.Writes) {
		return nil
	}
	return &st.Writes[ref.Index]
}

// placeInRow puts an extent [x0, x1] into the first row of a lane where it
// does not overlap the previous mark, opening a row when none has room and
// there are fewer than svgMaxRows; otherwise into the row that ends first.
func placeInRow(rowEnds *[]float64, x0, x1 float64) int {
	for r, end := range *rowEnds {
		if x0 >= end+svgMarkGap {
			(*rowEnds)[r] = x1
			return r
		}
	}
	if len(*rowEnds) < svgMaxRows {
		*rowEnds = append(*rowEnds, x1)
		return len(*rowEnds) - 1
	}
	best := 0
	for r, end := range *rowEnds {
		if end < (*rowEnds)[best] {
			best = r
		}
	}
	(*rowEnds)[best] = max((*rowEnds)[best], x1)
	return best
}

// stepLabel is the label of a step and the row it is drawn in, -1 for
// none.
type stepLabel struct {
	text string
	row  int
}

// layoutStepLabels labels the steps starting at xs: first each step's
// number, in the one of svgStepRows rows whose last label ends first, when
// it fits after it; then each number grows into "n. name", cut to the room left
// before the next label of its row (at most 36 characters). A step whose
// number finds no row has no label (its band's tooltip still names it).
func layoutStepLabels(steps []results.Step, xs []float64, right float64) []stepLabel {
	labels := make([]stepLabel, len(steps))
	ends := make([]float64, svgStepRows)
	for r := range ends {
		ends[r] = math.Inf(-1)
	}
	last := make([]int, svgStepRows) // the step labelled last in each row
	next := make([]int, len(steps))  // the step labelled next in the same row
	for r := range last {
		last[r] = -1
	}
	for i := range steps {
		next[i] = -1
		n := strconv.Itoa(i + 1)
		labels[i] = stepLabel{text: n, row: -1}
		r := 0 // the row that leaves the most room
		for k := range ends {
			if ends[k] < ends[r] {
				r = k
			}
		}
		if xs[i] < ends[r] {
			continue
		}
		labels[i].row, ends[r] = r, xs[i]+textWidth(n)
		if last[r] >= 0 {
			next[last[r]] = i
		}
		last[r] = i
	}
	for i := range steps {
		if labels[i].row < 0 {
			continue
		}
		room := right - xs[i]
		if next[i] >= 0 {
			room = xs[next[i]] - xs[i]
		}
		chars := min(36, int((room-8)/svgCharWidth))
		full := fmt.Sprintf("%d. %s", i+1, steps[i].Name)
		if chars >= len(strconv.Itoa(i+1))+4 { // "n. a…" at least
			labels[i].text = truncate(full, chars)
		}
	}
	return labels
}

// textWidth estimates the width of a label at font-size 11.
func textWidth(s string) float64 {
	return float64(utf8.RuneCountInString(s))*svgCharWidth + 8
}

func stepTitle(i int, st *results.Step) string {
	outcome := "passed"
	if !st.Passed {
		outcome = "FAILED"
	}
	t := fmt.Sprintf("step %d: %s\n%s, %s, %s", i+1, st.Name, st.Kind, outcome, formatDuration(st.Duration))
	if st.Failure != "" {
		t += "\n" + st.Failure
	}
	return t
}

// entryTitle is a mark's tooltip: the summary, when, the step and the
// detail.
func entryTitle(e *results.TimelineEntry, origin time.Time) string {
	var b strings.Builder
	b.WriteString(e.Summary)
	fmt.Fprintf(&b, "\nat +%s", formatDuration(e.At.Sub(origin)))
	if e.Kind == results.EntryWrite {
		fmt.Fprintf(&b, ", took %s", formatDuration(e.Duration))
	} else {
		b.WriteString(" (observed)")
	}
	fmt.Fprintf(&b, " · %s", e.Lane)
	if e.Step != "" {
		fmt.Fprintf(&b, "\nstep: %s", e.Step)
	}
	if e.Detail != "" {
		b.WriteString("\n")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// shapeSVG draws one mark centred on (x, y).
func shapeSVG(shape, color string, x, y float64, class, title string) string {
	r := float64(svgMarkRadius)
	t := "<title>" + title + "</title>"
	if title == "" {
		t = ""
	}
	open := func(el string) string { return fmt.Sprintf(`<%s class="%s"`, el, class) }
	switch shape {
	case shapeCross:
		return fmt.Sprintf(`%s d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="2.2" fill="none" pointer-events="all">%s</path>`+"\n",
			open("path"), num(x-r+1), num(y-r+1), num(x+r-1), num(y+r-1), num(x-r+1), num(y+r-1), num(x+r-1), num(y-r+1), color, t)
	case shapeDiamond:
		return fmt.Sprintf(`%s points="%s,%s %s,%s %s,%s %s,%s" fill="%s">%s</polygon>`+"\n",
			open("polygon"), num(x), num(y-r-1), num(x+r+1), num(y), num(x), num(y+r+1), num(x-r-1), num(y), color, t)
	case shapePause:
		return fmt.Sprintf(`%s d="M%s %sh3v%sh-3zM%s %sh3v%sh-3z" fill="%s">%s</path>`+"\n",
			open("path"), num(x-r+1), num(y-r), num(2*r), num(x+1), num(y-r), num(2*r), color, t)
	case shapePlay:
		return fmt.Sprintf(`%s points="%s,%s %s,%s %s,%s" fill="%s">%s</polygon>`+"\n",
			open("polygon"), num(x-r+1), num(y-r), num(x+r+1), num(y), num(x-r+1), num(y+r), color, t)
	case shapeTriangle:
		return fmt.Sprintf(`%s points="%s,%s %s,%s %s,%s" fill="%s">%s</polygon>`+"\n",
			open("polygon"), num(x-r), num(y-r+1), num(x+r), num(y-r+1), num(x), num(y+r), color, t)
	case shapeSquare:
		return fmt.Sprintf(`%s x="%s" y="%s" width="%s" height="%s" fill="%s">%s</rect>`+"\n",
			open("rect"), num(x-r+1), num(y-r+1), num(2*r-2), num(2*r-2), color, t)
	case shapeHollow:
		return fmt.Sprintf(`%s x="%s" y="%s" width="%s" height="%s" fill="#fff" stroke="%s" stroke-width="2">%s</rect>`+"\n",
			open("rect"), num(x-r+1), num(y-r+1), num(2*r-2), num(2*r-2), color, t)
	case shapeRing:
		return fmt.Sprintf(`%s cx="%s" cy="%s" r="%s" fill="#fff" stroke="%s" stroke-width="2.2">%s</circle>`+"\n",
			open("circle"), num(x), num(y), num(r-1), color, t)
	case shapeTick:
		return fmt.Sprintf(`%s x="%s" y="%s" width="3" height="%s" fill="%s">%s</rect>`+"\n",
			open("rect"), num(x-1.5), num(y-r-1), num(2*r+2), color, t)
	case shapeBar:
		return fmt.Sprintf(`%s x="%s" y="%s" width="%s" height="%s" rx="2" fill="%s">%s</rect>`+"\n",
			open("rect"), num(x-r-3), num(y-r+2), num(2*r+6), num(2*r-4), color, t)
	default:
		return fmt.Sprintf(`%s cx="%s" cy="%s" r="%s" fill="%s">%s</circle>`+"\n",
			open("circle"), num(x), num(y), num(r-0.5), color, t)
	}
}

// legendItem is one entry of the legend.
type legendItem struct {
	shape, color, label string
	outlined            bool
	x, y                float64 // set by layoutLegend, relative to the legend
}

// legendItems lists the kinds of marks the picture draws, writes first.
func legendItems(tl *results.Timeline, sc *results.Scenario) []legendItem {
	var ok, conflict, refused, unexpected bool
	kinds := map[string]bool{}
	for _, e := range tl.Entries {
		if e.Kind != results.EntryWrite {
			kinds[e.Kind] = true
			continue
		}
		switch writeColor(e.Status) {
		case colOK:
			ok = true
		case colConflict:
			conflict = true
		default:
			refused = true
		}
		if w := writeOf(sc, e.Write); w != nil && !w.Expected {
			unexpected = true
		}
	}
	var items []legendItem
	for _, w := range []struct {
		on    bool
		color string
		label string
	}{{ok, colOK, legendWriteOK}, {conflict, colConflict, legendWriteConflict}, {refused, colRefused, legendWriteRefused}} {
		if w.on {
			items = append(items, legendItem{shape: shapeBar, color: w.color, label: w.label})
		}
	}
	if unexpected {
		items = append(items, legendItem{shape: shapeBar, color: "#fff", label: legendUnexpected, outlined: true})
	}
	for _, s := range markStyles {
		if kinds[s.kind] {
			items = append(items, legendItem{shape: s.shape, color: s.color, label: s.label})
			delete(kinds, s.kind)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) { // kinds this version does not know
		items = append(items, legendItem{shape: shapeCircle, color: colUnknown, label: k})
	}
	return items
}

// layoutLegend places the items left to right, wrapping at width, and
// returns the number of rows.
func layoutLegend(items []legendItem, width float64) int {
	if len(items) == 0 {
		return 0
	}
	x, row := 0.0, 0
	for i := range items {
		w := 22 + float64(utf8.RuneCountInString(items[i].label))*svgCharWidth + 14
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		items[i].x, items[i].y = x, float64(row)*svgLegendRow
		x += w
	}
	return row + 1
}

func drawLegend(b *strings.Builder, items []legendItem, left, top, width float64) {
	for _, it := range items {
		cx, cy := left+it.x+8, top+it.y+svgLegendRow/2
		if it.outlined {
			fmt.Fprintf(b, `<rect class="tl-legend" x="%s" y="%s" width="%s" height="%s" rx="2" fill="#fff" stroke="#000" stroke-width="1.5"/>`+"\n",
				num(cx-svgMarkRadius-3), num(cy-svgMarkRadius+2), num(2*svgMarkRadius+6), num(2*svgMarkRadius-4))
		} else {
			b.WriteString(shapeSVG(it.shape, it.color, cx, cy, "tl-legend", ""))
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s">%s</text>`+"\n", num(left+it.x+22), num(cy+4), colText, esc(it.label))
	}
}

// gapLabel renders the time a break skips, to a tenth of a second.
func gapLabel(d time.Duration) string {
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', 1, 64) + "s"
}

// num renders a coordinate with at most one decimal.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// esc escapes text for SVG inside HTML and for XML: markup characters
// become entities and runes XML forbids become U+FFFD.
func esc(s string) string {
	return html.EscapeString(xmlSafe(s))
}

// truncate shortens s to at most n runes, ending it with "…".
func truncate(s string, n int) string {
	if n < 1 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

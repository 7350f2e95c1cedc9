package reports

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// A stretch of a timeline in which nothing is drawn is cut out of the axis
// when it is longer than svgGapMin and than a quarter of the whole: it is
// drawn as a break svgGapWidth wide, so that a scenario whose last step
// waits 30s still shows its first seconds readably.
const (
	svgGapMin   = 2 * time.Second
	svgGapWidth = 44.0
	// svgMinBusy is the least time left outside the breaks: below it, the
	// axis stays linear.
	svgMinBusy = 100 * time.Millisecond
	// svgTickLabelGap is the least distance between two tick labels.
	svgTickLabelGap = 40.0
)

// timeAxis maps a time to x, piecewise linearly over its segments, which
// cover [0, span] since origin in order.
type timeAxis struct {
	origin time.Time
	span   time.Duration
	// tick is the distance between two ticks of the segments that are not
	// breaks.
	tick time.Duration
	segs []axisSegment
}

// axisSegment is a stretch of time and the stretch of x it is drawn on.
type axisSegment struct {
	from, to time.Duration
	x0, x1   float64
	// gap marks a break: a stretch of nothing, drawn narrower than its
	// time.
	gap bool
}

// axisTick is a tick of the axis; label is empty where it would touch the
// previous one.
type axisTick struct {
	x     float64
	label string
}

// newTimeAxis lays [0, span] since origin over [left, right], breaking it
// where nothing happens for long: points are the times (since origin)
// something is drawn at.
func newTimeAxis(origin time.Time, span time.Duration, points []time.Duration, left, right float64) *timeAxis {
	if span <= 0 {
		span = time.Second
	}
	pts := []time.Duration{0, span}
	for _, p := range points {
		pts = append(pts, min(max(p, 0), span))
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	type gap struct{ from, to time.Duration }
	var gaps []gap
	var busy time.Duration
	for i := 1; i < len(pts); i++ {
		if d := pts[i] - pts[i-1]; d > svgGapMin && d > span/4 {
			gaps = append(gaps, gap{pts[i-1], pts[i]})
		} else {
			busy += d
		}
	}
	if len(gaps) == 0 || busy < svgMinBusy {
		tick := tickStep(span)
		span = max(span, time.Duration(math.Ceil(float64(span)/float64(tick)))*tick)
		return &timeAxis{origin: origin, span: span, tick: tick, segs: []axisSegment{{from: 0, to: span, x0: left, x1: right}}}
	}
	a := &timeAxis{origin: origin, span: span, tick: tickStep(busy)}
	scale := (right - left - float64(len(gaps))*svgGapWidth) / float64(busy)
	x, cur := left, time.Duration(0)
	for _, g := range gaps {
		if g.from > cur {
			w := scale * float64(g.from-cur)
			a.segs = append(a.segs, axisSegment{from: cur, to: g.from, x0: x, x1: x + w})
			x += w
		}
		a.segs = append(a.segs, axisSegment{from: g.from, to: g.to, x0: x, x1: x + svgGapWidth, gap: true})
		x, cur = x+svgGapWidth, g.to
	}
	if cur < span {
		a.segs = append(a.segs, axisSegment{from: cur, to: span, x0: x, x1: right})
	}
	return a
}

// x is where t is drawn; times outside the axis are drawn at its ends.
func (a *timeAxis) x(t time.Time) float64 {
	d := t.Sub(a.origin)
	if t.IsZero() || d < 0 {
		d = 0
	}
	d = min(d, a.span)
	for _, s := range a.segs {
		if d <= s.to {
			if s.to == s.from {
				return s.x0
			}
			return s.x0 + (s.x1-s.x0)*float64(d-s.from)/float64(s.to-s.from)
		}
	}
	return a.segs[len(a.segs)-1].x1
}

// ticks are the axis's ticks: every multiple of tick inside a segment that
// is not a break, the start of a segment that follows one, and the end of
// an axis that ends in one.
func (a *timeAxis) ticks() []axisTick {
	var out []axisTick
	lastLabel := math.Inf(-1)
	add := func(d time.Duration) {
		x := a.x(a.origin.Add(d))
		t := axisTick{x: x}
		if x-lastLabel >= svgTickLabelGap {
			t.label, lastLabel = tickLabel(d, a.tick), x
		}
		out = append(out, t)
	}
	for i, s := range a.segs {
		if s.gap {
			continue
		}
		first := time.Duration(math.Ceil(float64(s.from)/float64(a.tick))) * a.tick
		if i > 0 && first != s.from {
			add(s.from)
		}
		for d := first; d <= s.to; d += a.tick {
			add(d)
		}
	}
	if a.segs[len(a.segs)-1].gap { // the axis ends in a break: say when
		add(a.span)
	}
	return out
}

// tickSteps are the candidate distances between two axis ticks.
var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

// tickStep is the smallest candidate that puts at most 10 ticks on span.
func tickStep(span time.Duration) time.Duration {
	for _, s := range tickSteps {
		if span/s <= 10 {
			return s
		}
	}
	return time.Duration(math.Ceil(float64(span)/float64(10*time.Hour))) * time.Hour
}

// tickLabel renders a time at the precision of the tick step: "0s",
// "0.25s", "12s", "1m30s".
func tickLabel(t, step time.Duration) string {
	if t >= time.Minute && step >= time.Second {
		return t.Round(time.Second).String()
	}
	decimals := 0
	for s := step; s%time.Second != 0 && decimals < 3; s *= 10 {
		decimals++
	}
	return strconv.FormatFloat(t.Seconds(), 'f', decimals, 64) + "s"
}

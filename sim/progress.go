package sim

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// startProgress is what every provider's Start shares: the clock it is
// timed by, when it began, and the callback each step's readiness goes to.
type startProgress struct {
	clock   clock.PassiveClock
	report  func(ComponentTiming)
	started time.Time
	mu      sync.Mutex
	timings []ComponentTiming
}

// begin starts the timing, with clk (nil: the real clock) and report (nil:
// none). A start that began earlier (a provider that starts another) keeps
// its beginning.
func (p *startProgress) begin(clk clock.PassiveClock, report func(ComponentTiming)) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	p.clock, p.report = clk, report
	if p.started.IsZero() {
		p.started = clk.Now()
	}
}

func (p *startProgress) now() time.Time {
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p.clock.Now()
}

// ready records that the step name, begun at since, is done, and reports it.
func (p *startProgress) ready(name string, since time.Time) {
	now := p.now()
	t := ComponentTiming{Name: name, Took: now.Sub(since), ReadyAt: now.Sub(p.started)}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timings = append(p.timings, t)
	if p.report != nil {
		p.report(t)
	}
}

// snapshot returns the steps done so far, in order.
func (p *startProgress) snapshot() []ComponentTiming {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ComponentTiming(nil), p.timings...)
}

// startContext bounds a Start by timeout (zero: DefaultStartTimeout).
func startContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

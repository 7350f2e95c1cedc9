// Package startup holds what every provider's Start shares: its timing and
// progress report, its deadline, the grace given to what it stops, and its
// temporary work directory.
package startup

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/sim/cluster"
)

// Grace and polling of every provider.
const (
	// StopGrace is how long a child process gets between SIGTERM and
	// SIGKILL, and bounds each Stop's clean-up.
	StopGrace = 10 * time.Second
	// PollInterval is how often readiness checks run during Start.
	PollInterval = 100 * time.Millisecond
)

// Progress is what every provider's Start shares: the clock it is
// timed by, when it began, and the callback each step's readiness goes to.
type Progress struct {
	clock   clock.PassiveClock
	report  func(cluster.StepTiming)
	started time.Time
	mu      sync.Mutex
	timings []cluster.StepTiming
}

// Start begins a provider's Start, the same way for every provider: the
// timing, with clk (nil: the real clock) and report (nil: none); its
// clients set to list, then watch (listThenWatch); and ctx bounded by
// timeout (zero: cluster.DefaultStartTimeout). The process's global loggers
// are left as the program set them (sim.RouteProcessLogs).
func (p *Progress) Start(ctx context.Context, clk clock.PassiveClock, report func(cluster.StepTiming), timeout time.Duration) (context.Context, context.CancelFunc) {
	p.begin(clk, report)
	setListThenWatch()
	if timeout == 0 {
		timeout = cluster.DefaultStartTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

// begin starts the timing. A start that began earlier (BeganAt) keeps its
// beginning.
func (p *Progress) begin(clk clock.PassiveClock, report func(cluster.StepTiming)) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	p.clock, p.report = clk, report
	if p.started.IsZero() {
		p.started = clk.Now()
	}
}

// Now is the time on the Progress's clock.
func (p *Progress) Now() time.Time {
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p.clock.Now()
}

// Ready records that the step name, begun at since, is done, and reports it.
func (p *Progress) Ready(name string, since time.Time) {
	now := p.Now()
	t := cluster.StepTiming{Name: name, Took: now.Sub(since), ReadyAt: now.Sub(p.started)}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timings = append(p.timings, t)
	if p.report != nil {
		p.report(t)
	}
}

// Steps returns the steps done so far, in order.
func (p *Progress) Steps() []cluster.StepTiming {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]cluster.StepTiming(nil), p.timings...)
}

// Clock is the clock Begin was given (the real clock before).
func (p *Progress) Clock() clock.PassiveClock {
	if p.clock == nil {
		return clock.RealClock{}
	}
	return p.clock
}

// BeganAt makes a Progress not yet begun time its steps from t (zero: from
// Start), for a provider started by another after its own steps.
func (p *Progress) BeganAt(t time.Time) {
	if p.started.IsZero() {
		p.started = t
	}
}

// Began is when the timing began (see Start and BeganAt).
func (p *Progress) Began() time.Time { return p.started }

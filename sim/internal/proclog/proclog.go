// Package proclog keeps the process-wide loggers of the libraries the
// harness runs in its own process off the terminal, where simctl's own
// output (one line per scenario) is.
//
// Three loggers are global to a Go process:
//
//   - klog, where client-go writes the API server's warnings (its default
//     warning handler, "Warning: unknown field ..."), its reflectors' list
//     and watch errors, its event broadcasters' failures, leader election
//     and utilruntime.HandleError; by default to standard error;
//   - controller-runtime's global logger, where its clients write warnings
//     and code without a logger of its own logs; it prints to standard error
//     that it was never set, with a stack, when nothing sets it;
//   - the standard library's log package, where net/http servers (the
//     in-process webhook server) write TLS handshake errors; by default to
//     standard error.
//
// Install is the program's choice, never a library's: simctl makes it
// (through sim.RouteProcessLogs), and so do the ginkgo adapter for the
// suite it declares and the e2e-framework provider when it creates its
// cluster (which attaches standard error while no cluster runs); a program that embeds sim and keeps loggers of its own
// leaves it out, and its loggers stay as they are. Install routes all three
// to the writer Attach names last (an envtest cluster attaches its
// logs/controllers.log while its in-process Trainer, JobSet and provisioner
// run) and drops their lines while none is attached:
// then nothing of the harness runs in the process that a log file would be
// for (before a cluster's API server is up, after it stops, and on kind or
// an existing cluster, where the Trainer runs elsewhere and the runner
// records the warnings of its writes itself).
//
// The loggers are global, so a line cannot be told apart by the cluster it
// is about: with two clusters in one process (tests, benchmarks) it goes to
// the log of the one attached last. klog's verbosity is left as it is
// (-v 0: informational lines, warnings and errors, no debug lines).
package proclog

import (
	"io"
	"log"
	"slices"
	"sync"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

var (
	installOnce sync.Once
	// mu guards outs.
	mu sync.Mutex
	// outs are the attached writers; the last one gets the lines.
	outs []*output
)

// output is one Attach, so that the same writer can be attached twice.
type output struct{ w io.Writer }

// sink is the writer the three loggers write to.
type sink struct{}

// Write gives p to the writer attached last, or drops it. It never fails,
// so that no logger reports a write error on standard error.
func (sink) Write(p []byte) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if len(outs) > 0 {
		_, _ = outs[len(outs)-1].w.Write(p)
	}
	return len(p), nil
}

// Install routes klog, controller-runtime's global logger and the standard
// library's log package to the attached writer for the rest of the
// process. Calling it again does nothing.
func Install() {
	installOnce.Do(func() {
		// klog's own lines keep their format ("I1123 21:39:02.456647
		// 7664 warnings.go:107] ...") and go to the sink instead of
		// standard error; its structured calls (InfoS, ErrorS, klogr, as
		// client-go's reflectors and warning handler use) go to a text
		// logger of the same format writing to the sink.
		text := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(sink{})))
		klog.SetLoggerWithOptions(text, klog.WriteKlogBuffer(func(p []byte) { _, _ = sink{}.Write(p) }))
		// As the in-process controllers' own logger (sim/providers/envtest/controllers.go).
		ctrllog.SetLogger(zap.New(zap.WriteTo(sink{}), zap.Level(zapcore.InfoLevel)))
		log.SetOutput(sink{})
	})
}

// Attach makes w the writer that gets the lines until detach is called
// (then the writer attached before it, if any, gets them again). It routes
// nothing itself: the lines reach w once the program called Install.
// Writes to w are serialized; detach may be called more than once.
func Attach(w io.Writer) (detach func()) {
	o := &output{w: w}
	mu.Lock()
	outs = append(outs, o)
	mu.Unlock()
	return sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		outs = slices.DeleteFunc(outs, func(x *output) bool { return x == o })
	})
}

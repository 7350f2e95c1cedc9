package runner

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
)

// The API server's warnings (HTTP Warning headers: an unknown field it
// dropped, a deprecated API) are part of a write's result. client-go hands
// them to a warning handler, by default one that logs them through klog; the
// actors' clients have recordWarnings instead, which puts each warning on the
// write whose request it answered. The write is found through the request's
// context, not through a handler shared by the writes, so that writes sent
// at the same instant (concurrently) each get their own.

// warningsKey is the context key of a write's warnings.
type warningsKey struct{}

// warningList collects the warnings of one write, which may send several
// requests (a selector's list, then one patch or delete per object).
type warningList struct {
	mu   sync.Mutex
	list []string
}

// withWarnings returns a context whose requests record their warnings in the
// returned list.
func withWarnings(ctx context.Context) (context.Context, *warningList) {
	l := &warningList{}
	return context.WithValue(ctx, warningsKey{}, l), l
}

// warnings returns the warnings recorded so far, in the order they came.
func (l *warningList) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// recordWarnings is the warning handler of every actor's client.
type recordWarnings struct{}

var _ rest.WarningHandlerWithContext = recordWarnings{}

// HandleWarningHeaderWithContext records a warning (code 299, as the API
// server sends them, with a text) on the write of the request's context. A
// request that is no write's (an expectation's read) has none: its warning
// goes to client-go's default handler, klog, which the cluster's provider
// keeps off the terminal (sim/internal/proclog).
func (recordWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	l, ok := ctx.Value(warningsKey{}).(*warningList)
	if !ok {
		rest.WarningLogger{}.HandleWarningHeaderWithContext(ctx, code, agent, text)
		return
	}
	if code != 299 || text == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, text)
}

// recordingWarnings sets cfg's warning handler to recordWarnings.
func recordingWarnings(cfg *rest.Config) *rest.Config {
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = recordWarnings{}
	return cfg
}

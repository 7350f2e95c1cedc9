package runner

import (
	"context"
	"net/http"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// A write's result holds what the API server answered: the HTTP status of
// its last response and the warnings of all of them (HTTP Warning headers:
// an unknown field it dropped, a deprecated API). The actors' clients read
// both from each response in their transport (answersTransport) and put
// them on the write whose request it answered. The write is found through
// the request's context, not through state the writes share, so that
// writes sent at the same instant (concurrently) each get their own.

// answersKey is the context key of a write's answers.
type answersKey struct{}

// answers collects the responses of one write, which may send several
// requests (a selector's list, then one patch or delete per object).
type answers struct {
	mu     sync.Mutex
	status int
	texts  []string // the warnings
}

// withAnswers returns a context whose requests record their responses in
// the returned answers.
func withAnswers(ctx context.Context) (context.Context, *answers) {
	a := &answers{}
	return context.WithValue(ctx, answersKey{}, a), a
}

// lastStatus is the HTTP status of the last response; 0 before any.
func (a *answers) lastStatus() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// warnings returns the warnings recorded so far, in the order they came.
func (a *answers) warnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.texts...)
}

// record keeps a response's status and the API server's warnings (code
// 299, with a text).
func (a *answers) record(resp *http.Response) {
	parsed, _ := utilnet.ParseWarningHeaders(resp.Header["Warning"])
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status = resp.StatusCode
	for _, w := range parsed {
		if w.Code == 299 && w.Text != "" {
			a.texts = append(a.texts, w.Text)
		}
	}
}

// recordStatus keeps, on the write of ctx, the status of an answer the
// write learnt otherwise than as a response of its own: a gate's release
// has the API server's answer to what it let through, from the audit log.
func recordStatus(ctx context.Context, code int) {
	if a, ok := ctx.Value(answersKey{}).(*answers); ok {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.status = code
	}
}

// answersTransport records each response on the answers of its request's
// context, if it has any.
type answersTransport struct{ next http.RoundTripper }

func (t answersTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if a, ok := req.Context().Value(answersKey{}).(*answers); ok && resp != nil {
		a.record(resp)
	}
	return resp, err
}

// warningsOutsideWrites is the warning handler of every actor's client: a
// write's warnings are its answers', and a request that is no write's (an
// expectation's read) has its warning logged by client-go's default
// handler, klog, which simctl keeps off the terminal (sim.RouteProcessLogs).
type warningsOutsideWrites struct{}

var _ rest.WarningHandlerWithContext = warningsOutsideWrites{}

func (warningsOutsideWrites) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	if _, ok := ctx.Value(answersKey{}).(*answers); ok {
		return
	}
	rest.WarningLogger{}.HandleWarningHeaderWithContext(ctx, code, agent, text)
}

// recordingAnswers sets cfg up to record its responses on the write of each
// request's context.
func recordingAnswers(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return answersTransport{next: rt} })
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = warningsOutsideWrites{}
	return cfg
}

// Package auditimport turns an API server's audit log back into a
// scenario: one actor per (user, field manager) that wrote the chosen
// TrainJobs, one step per write in the order the server completed them,
// with the verb, patch type and body the request used, every refusal kept
// as an expectError, writes that overlapped in time in a concurrently
// group, and the TrainJobs' final runtimePatches as the last step's
// expectation. The components' writes are left out: replay's own
// controllers do that work again.
package auditimport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// event is the part of an audit.k8s.io/v1 Event import reads.
type event struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Level      string `json:"level"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
	// Annotations are the API server's: which mutating webhooks ran in
	// which round and what they changed, among them.
	Annotations map[string]string `json:"annotations"`
	Received    time.Time         `json:"requestReceivedTimestamp"`
	Completed   time.Time         `json:"stageTimestamp"`

	// Where it was read: file and line.
	file string
	line int
	// node is the Node a create made, once nodeCreate parsed it.
	node       *corev1.Node
	nodeParsed bool
}

func (e *event) where() string { return fmt.Sprintf("%s:%d", e.file, e.line) }

// user is who the server authorised the request as: the impersonated user
// when there was one.
func (e *event) user() (string, []string) {
	if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
		return e.ImpersonatedUser.Username, e.ImpersonatedUser.Groups
	}
	return e.User.Username, e.User.Groups
}

// query is the request's query parameter, "" without it.
func (e *event) query(name string) string {
	u, err := url.Parse(e.RequestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get(name)
}

// fieldManager is the manager the server recorded the write under: the
// request's fieldManager, else the API server's default, the user agent up
// to its first slash.
func (e *event) fieldManager() string {
	if m := e.query("fieldManager"); m != "" {
		return m
	}
	m, _, _ := strings.Cut(e.UserAgent, "/")
	return m
}

// InputError is bad input: a file that is not an audit log, a log cut
// short, events without the bodies import needs, a TrainJob the log never
// writes. simctl exits 2 on it.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// IsInputError reports whether err is bad input.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// readEvents reads the audit events of r, a file named file, one JSON
// object a line, and calls each with every answered one (stage
// ResponseComplete); a line that is not an audit.k8s.io/v1 Event is bad
// input that names it, and so is a last line cut short. It streams: the
// log is never held whole.
func readEvents(r io.Reader, file string, each func(*event) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", file, err)
		}
		text := strings.TrimSpace(string(line))
		if text != "" {
			ev := &event{file: file, line: n}
			if jerr := json.Unmarshal([]byte(text), ev); jerr != nil {
				if errors.Is(err, io.EOF) && !strings.HasSuffix(string(line), "\n") {
					return inputErrorf("%s:%d: the last line is cut short (the log was copied while the server wrote it?): %v", file, n, jerr)
				}
				return inputErrorf("%s:%d: not an audit event (one JSON audit.k8s.io/v1 Event a line): %v", file, n, jerr)
			}
			if ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/") {
				return inputErrorf("%s:%d: not an audit event: kind %q, apiVersion %q (want Event, audit.k8s.io/v1)", file, n, ev.Kind, ev.APIVersion)
			}
			if ev.Stage == "ResponseComplete" {
				if cerr := each(ev); cerr != nil {
					return cerr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

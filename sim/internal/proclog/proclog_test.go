package proclog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// klogLine is klog's header: severity, month and day.
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} `)

// captureStd replaces os.Stdout and os.Stderr with pipes while fn runs and
// returns what was written to them.
func captureStd(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	func() {
		defer func() { os.Stdout, os.Stderr = stdout, stderr }()
		fn()
	}()
	_ = w.Close()
	return <-done
}

// logEverything writes one line through every process-wide logger the
// harness's libraries use, tagged with tag.
func logEverything(tag string) {
	klog.Info("klog info " + tag)
	klog.Warning("klog warning " + tag)
	klog.ErrorS(errors.New("boom"), "klog error "+tag)
	klog.FromContext(context.Background()).Info("contextual klog " + tag)
	rest.WarningLogger{}.HandleWarningHeaderWithContext(context.Background(), 299, "-", `unknown field "spec.x" `+tag)
	utilruntime.HandleError(errors.New("handled error " + tag))
	ctrllog.Log.Info("controller-runtime " + tag)
	log.Print("http: TLS handshake error " + tag)
}

func TestAttachedWriterGetsEveryLoggerAndTheTerminalNone(t *testing.T) {
	var attached bytes.Buffer
	terminal := captureStd(t, func() {
		Install()
		detach := Attach(&attached)
		logEverything("while attached")
		detach()
		detach() // a second call does nothing
		logEverything("after detach")
	})
	if terminal != "" {
		t.Errorf("the process's stdout and stderr got %q, want nothing", terminal)
	}
	got := attached.String()
	for _, want := range []string{
		"klog info while attached",
		"klog warning while attached",
		"klog error while attached",
		"contextual klog while attached",
		`Warning: unknown field \"spec.x\" while attached`,
		"handled error while attached",
		"controller-runtime while attached",
		"http: TLS handshake error while attached",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("attached log lacks %q:\n%s", want, got)
		}
	}
	if !klogLine.MatchString(got) {
		t.Errorf("attached log has no klog-formatted line (klog keeps its format):\n%s", got)
	}
	if strings.Contains(got, "after detach") {
		t.Errorf("a line logged after detach reached the detached writer:\n%s", got)
	}
}

func TestTheLastAttachedWriterGetsTheLines(t *testing.T) {
	Install()
	var first, second bytes.Buffer
	detachFirst := Attach(&first)
	defer detachFirst()
	detachSecond := Attach(&second)
	klog.Info("to the second")
	detachSecond()
	klog.Info("to the first again")
	if got, want := lines(first.String()), []string{"to the first again"}; !cmp.Equal(want, got) {
		t.Errorf("first writer mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got, want := lines(second.String()), []string{"to the second"}; !cmp.Equal(want, got) {
		t.Errorf("second writer mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// lines returns the messages of klog lines, without their headers.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if _, msg, ok := strings.Cut(l, "] "); ok {
			out = append(out, msg)
		}
	}
	return out
}

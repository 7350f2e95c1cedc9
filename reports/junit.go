package reports

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trainersim/trainersim/results"
)

// junitFailureType is the type attribute of a failed scenario's <failure>.
const junitFailureType = "ScenarioFailed"

// junitTimestamp is the timestamp layout of the Ant JUnit schema: ISO 8601
// without a zone. WriteJUnit writes UTC.
const junitTimestamp = "2006-01-02T15:04:05"

// errNilRun is returned by the writers when there is no run to write.
var errNilRun = errors.New("run is nil")

type junitTestSuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []junitTestSuite `xml:"testsuite"`
}

type junitTestSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	TestCases  []junitTestCase `xml:"testcase"`
	// SystemOut says why a run holds fewer results than it was to.
	SystemOut *junitCDATA `xml:"system-out"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure"`
	Skipped   *junitSkipped `xml:"skipped"`
	SystemOut *junitCDATA   `xml:"system-out"`
}

// junitSkipped marks a scenario that did not run on this cluster.
type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// junitCDATA is an element whose text is written as CDATA, so that
// multi-line text stays readable in the file.
type junitCDATA struct {
	Text string `xml:",cdata"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// WriteJUnit writes JUnit XML: one <testsuite> for the run, one <testcase> per scenario.
//
// The document has the <testsuites><testsuite>...</testsuite></testsuites>
// shape that Jenkins, GitLab and GitHub actions read. A <testcase> is named
// after the scenario; its classname is the scenario's file. A failed scenario
// has a <failure> whose message is Scenario.Failure and whose body lists each
// failing step with its failure, its diff verbatim and its writes, then the
// writes the server refused in earlier steps. Every scenario has a
// <system-out> with one line per step. Scenarios an interrupted or
// unfinished run did not finish are not in the Run and have no <testcase>;
// the suite has an "interrupted" or "unfinished" property instead, a
// "notReported" property with their count, and a <system-out> that says so
// (Run.Incomplete), names them and lists the Run's Problems. A shard's run
// has a "shard" property (K/N); a merged one "shards", and "missingShards"
// with the <system-out> when it lacks some. Runes that XML
// 1.0 forbids are replaced with U+FFFD, so the output is always
// well-formed.
func WriteJUnit(w io.Writer, run *results.Run) error {
	if run == nil {
		return fmt.Errorf("failed to write junit report: %w", errNilRun)
	}
	suite := junitTestSuite{
		Name:      "simctl",
		Tests:     len(run.Scenarios),
		Time:      seconds(run.Duration),
		Timestamp: run.Started.UTC().Format(junitTimestamp),
		Properties: []junitProperty{
			{Name: "cluster", Value: xmlSafe(run.Cluster)},
			{Name: "kubernetesVersion", Value: xmlSafe(run.KubernetesVersion)},
			{Name: "trainerVersion", Value: xmlSafe(run.TrainerVersion)},
			{Name: "jobSetVersion", Value: xmlSafe(run.JobSetVersion)},
		},
	}
	if run.TrainerCheckout != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "trainerCheckout", Value: xmlSafe(run.TrainerCheckout)})
	}
	if run.KueueCheckout != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "kueueCheckout", Value: xmlSafe(run.KueueCheckout)})
	}
	if run.KueueVersion != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "kueueVersion", Value: xmlSafe(run.KueueVersion)})
	}
	if run.Interrupted {
		suite.Properties = append(suite.Properties, junitProperty{Name: "interrupted", Value: "true"})
	}
	if run.Unfinished {
		suite.Properties = append(suite.Properties, junitProperty{Name: "unfinished", Value: "true"})
	}
	if run.Shard != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "shard", Value: xmlSafe(run.Shard)})
	}
	if len(run.Shards) > 0 {
		suite.Properties = append(suite.Properties, junitProperty{Name: "shards", Value: xmlSafe(strings.Join(run.Shards, ","))})
	}
	if len(run.MissingShards) > 0 {
		suite.Properties = append(suite.Properties, junitProperty{Name: "missingShards", Value: xmlSafe(strings.Join(run.MissingShards, ","))})
	}
	if incomplete := run.Incomplete(); incomplete != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "notReported", Value: fmt.Sprint(len(run.NotReported))})
		out := incomplete + "\n"
		for _, name := range run.NotReported {
			out += "never reported: " + name + "\n"
		}
		for _, p := range run.Problems {
			out += p + "\n"
		}
		suite.SystemOut = &junitCDATA{Text: xmlSafe(out)}
	}
	for i := range run.Scenarios {
		sc := &run.Scenarios[i]
		tc := junitTestCase{
			Name:      xmlSafe(sc.Name),
			Classname: xmlSafe(sc.File),
			Time:      seconds(sc.Duration),
		}
		if out := junitSteps(sc); out != "" {
			tc.SystemOut = &junitCDATA{Text: xmlSafe(out)}
		}
		switch {
		case sc.Skipped != "":
			suite.Skipped++
			tc.Skipped = &junitSkipped{Message: xmlSafe(oneLine(sc.Skipped))}
		case !sc.Passed:
			suite.Failures++
			msg := oneLine(sc.Failure)
			if msg == "" {
				msg = "scenario failed"
			}
			tc.Failure = &junitFailure{
				Message: xmlSafe(msg),
				Type:    junitFailureType,
				Text:    xmlSafe(junitFailureText(sc)),
			}
		}
		suite.TestCases = append(suite.TestCases, tc)
	}
	// A shaken scenario whose verdict changed is a failure of its own.
	if found := run.OrderDependent(); len(found) > 0 {
		suite.Properties = append(suite.Properties, junitProperty{Name: "orderDependent", Value: fmt.Sprint(len(found))})
		for _, f := range found {
			suite.Tests++
			suite.Failures++
			suite.TestCases = append(suite.TestCases, junitTestCase{
				Name:      xmlSafe(f.Scenario + " [order-dependent]"),
				Classname: xmlSafe(orderDependentFile(run, f.Scenario)),
				Failure: &junitFailure{
					Message: xmlSafe(OrderDependentLine(f)),
					Type:    junitFailureType,
					Text:    xmlSafe(OrderDependentLine(f) + "\nfailure: " + f.Failure + "\nreplay: " + orderDependentReplay(run, f) + "\n"),
				},
			})
		}
	}
	return encodeJUnit(w, suite)
}

// JUnitCase is a test case of WriteJUnitCases: failed when Failure is not
// "" (Text its body), skipped when Skipped is not "", and Out its
// <system-out>.
type JUnitCase struct {
	Name, Classname string
	Duration        time.Duration
	Failure, Text   string
	Skipped         string
	Out             string
}

// WriteJUnitCases writes JUnit XML of one suite, name, of cases, in
// WriteJUnit's shape: simctl explore's, one case per plan run.
func WriteJUnitCases(w io.Writer, name string, started time.Time, duration time.Duration, cases []JUnitCase) error {
	suite := junitTestSuite{Name: xmlSafe(name), Tests: len(cases), Time: seconds(duration), Timestamp: started.UTC().Format(junitTimestamp)}
	for _, c := range cases {
		tc := junitTestCase{Name: xmlSafe(c.Name), Classname: xmlSafe(c.Classname), Time: seconds(c.Duration)}
		if c.Out != "" {
			tc.SystemOut = &junitCDATA{Text: xmlSafe(c.Out)}
		}
		switch {
		case c.Failure != "":
			suite.Failures++
			tc.Failure = &junitFailure{Message: xmlSafe(oneLine(c.Failure)), Type: junitFailureType, Text: xmlSafe(c.Text)}
		case c.Skipped != "":
			suite.Skipped++
			tc.Skipped = &junitSkipped{Message: xmlSafe(oneLine(c.Skipped))}
		}
		suite.TestCases = append(suite.TestCases, tc)
	}
	return encodeJUnit(w, suite)
}

// encodeJUnit writes the document of one suite.
func encodeJUnit(w io.Writer, suite junitTestSuite) error {
	doc := junitTestSuites{
		Name:     suite.Name,
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Skipped:  suite.Skipped,
		Time:     suite.Time,
		Suites:   []junitTestSuite{suite},
	}

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("failed to write junit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("failed to encode junit report: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("failed to encode junit report: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("failed to write junit report: %w", err)
	}
	return nil
}

// junitSteps is a scenario's <system-out>: one line per step.
func junitSteps(sc *results.Scenario) string {
	var b strings.Builder
	for i := range sc.Steps {
		st := &sc.Steps[i]
		result := "passed"
		if !st.Passed {
			result = "FAILED"
		}
		fmt.Fprintf(&b, "step %d %s in %ss: %s (%s)\n", i+1, result, seconds(st.Duration), oneLine(st.Name), st.Kind)
	}
	return b.String()
}

// junitFailureText is the body of a failed scenario's <failure>.
func junitFailureText(sc *results.Scenario) string {
	var b strings.Builder
	if sc.Failure != "" {
		b.WriteString(sc.Failure)
		b.WriteString("\n")
	}
	var earlier []*results.Write
	for i := range sc.Steps {
		st := &sc.Steps[i]
		if st.Passed {
			for j := range st.Writes {
				if refused(&st.Writes[j]) || !st.Writes[j].Expected {
					earlier = append(earlier, &st.Writes[j])
				}
			}
			continue
		}
		fmt.Fprintf(&b, "\nStep %d %q (%s) failed after %ss:\n", i+1, oneLine(st.Name), st.Kind, seconds(st.Duration))
		if st.Failure != "" {
			b.WriteString(strings.TrimRight(st.Failure, "\n"))
			b.WriteString("\n")
		}
		if st.Diff != "" {
			b.WriteString("\nDiff (-want +got):\n")
			b.WriteString(strings.TrimRight(st.Diff, "\n"))
			b.WriteString("\n")
		}
		if len(st.Writes) > 0 {
			fmt.Fprintf(&b, "\nWrites of step %d:\n", i+1)
			for j := range st.Writes {
				junitWrite(&b, &st.Writes[j])
			}
		}
	}
	if len(earlier) > 0 {
		b.WriteString("\nWrites refused in earlier steps:\n")
		for _, w := range earlier {
			junitWrite(&b, w)
		}
	}
	return b.String()
}

// junitWrite lists one write as a YAML-like block.
func junitWrite(b *strings.Builder, w *results.Write) {
	fmt.Fprintf(b, "- actor: %s\n", w.Actor)
	fmt.Fprintf(b, "  fieldManager: %s\n", w.FieldManager)
	fmt.Fprintf(b, "  verb: %s\n", verbText(w))
	fmt.Fprintf(b, "  target: %s\n", w.Target)
	if w.ResourceVersionBefore != "" || w.ResourceVersionAfter != "" {
		fmt.Fprintf(b, "  resourceVersion: %s -> %s\n", orNone(w.ResourceVersionBefore), orNone(w.ResourceVersionAfter))
	}
	fmt.Fprintf(b, "  status: %s\n", statusText(w.Status))
	if w.Reason != "" {
		fmt.Fprintf(b, "  reason: %s\n", w.Reason)
	}
	if w.Message != "" {
		fmt.Fprintf(b, "  message: %s\n", strings.ReplaceAll(strings.TrimRight(w.Message, "\n"), "\n", "\n    "))
	}
	if len(w.Warnings) > 0 {
		b.WriteString("  warnings:\n")
		for _, warning := range w.Warnings {
			fmt.Fprintf(b, "  - %s\n", warning)
		}
	}
	fmt.Fprintf(b, "  expected: %t\n", w.Expected)
}

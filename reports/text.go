package reports

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trainersim/trainersim/results"
)

// formatDuration renders d for a person: milliseconds below a second,
// seconds with three decimals above ("1.204s", "2m3.5s").
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

// seconds renders d as seconds with three decimals, as JUnit wants.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.3f", d.Seconds())
}

// oneLine folds s onto one line: line breaks and the blanks around them
// become a single space.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return strings.TrimSpace(s)
	}
	return strings.Join(strings.Fields(s), " ")
}

// statusText renders an HTTP status code with its text, "409 Conflict", or
// "no response" for 0.
func statusText(code int) string {
	if code == 0 {
		return "no response"
	}
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("%d", code)
}

// refused reports whether the server refused w or did not answer.
func refused(w *results.Write) bool {
	return w.Status == 0 || w.Status >= 400
}

// verbText is the verb with its patch type, "patch (merge)".
func verbText(w *results.Write) string {
	if w.PatchType == "" || w.PatchType == w.Verb {
		return w.Verb
	}
	return w.Verb + " (" + w.PatchType + ")"
}

// orNone returns s, or "(none)" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// xmlSafe replaces every rune XML 1.0 forbids (most C0 controls, surrogates,
// U+FFFE, U+FFFF) and every invalid UTF-8 byte with U+FFFD.
func xmlSafe(s string) string {
	ok := true
	for i, r := range s {
		if !xmlChar(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		if !xmlChar(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// xmlChar reports whether r is a Char of XML 1.0.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

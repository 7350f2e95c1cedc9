package v1alpha1

import "strings"

// placeholderPrefix begins a placeholder: a string value that stands for
// something a scenario needs and its author (simctl import, when the audit
// log did not hold it) could not give. Lint refuses a scenario that still
// has one, naming each.
const placeholderPrefix = "<fill in: "

// Placeholder is the placeholder value for what, a sentence that says what
// is missing and where to find it.
func Placeholder(what string) string { return placeholderPrefix + what + ">" }

// PlaceholderText is what a placeholder value stands for; false when v is
// not one.
func PlaceholderText(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, placeholderPrefix) || !strings.HasSuffix(s, ">") {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, placeholderPrefix), ">"), true
}

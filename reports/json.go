package reports

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/trainersim/trainersim/results"
)

// WriteJSON writes the whole Run as indented JSON.
//
// The document is the Run with the model's JSON tags, so it decodes back
// into a Run: times are RFC 3339 and durations are integer nanoseconds.
// Characters such as < and & are written as they are, not as \u escapes.
func WriteJSON(w io.Writer, run *results.Run) error {
	if run == nil {
		return fmt.Errorf("failed to write json report: %w", errNilRun)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(run); err != nil {
		return fmt.Errorf("failed to encode json report: %w", err)
	}
	return nil
}

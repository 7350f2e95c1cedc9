package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// Clone returns a deep copy of the scenario, by its JSON: every field is
// JSON, so nothing is lost.
func (s *Scenario) Clone() *Scenario {
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("a scenario that does not marshal: %v", err))
	}
	var out Scenario
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("a scenario that does not unmarshal: %v", err))
	}
	return &out
}

// Package scenario loads scenario files (sim/apis/v1alpha1) strictly, so that
// a mistake in a scenario is reported before a cluster starts, with the file,
// the line and the field it is at, instead of surfacing minutes later as a
// write the API server refused or an expectation that never held.
//
// Loading has three stages, each of which reports every problem it finds:
//
//  1. Parsing: the file must be one YAML document (go.yaml.in/yaml/v4).
//  2. Structure: the YAML tree is walked alongside the Go types, field names
//     being the json tags. Unknown fields, duplicate keys, values of the wrong
//     kind (a string where an integer belongs, a mapping where a list belongs)
//     and missing required fields (those without omitempty) are errors.
//     Free-form objects (v1alpha1.Object, patch bodies) are not checked here.
//  3. Meaning: once the structure is sound the file is decoded into a
//     v1alpha1.Scenario and checked as a whole: apiVersion and kind, names,
//     that every actor, node profile, fixture and update.from exists, and the
//     rules on which fields a step may combine (see v1alpha1.Step).
//
// Semantic problems are only looked for in files whose structure is sound.
// LoadPaths also requires metadata.name to be unique across the files it
// loads.
//
// The package does not talk to a cluster: it cannot tell whether an object
// in a step is valid for its kind, or whether a write will be accepted.
//
// CheckSchemaLine is separate from loading: simctl lint uses it to warn
// when the optional "# yaml-language-server: $schema=..." line, which makes
// editors validate scenario files against
// sim/apis/v1alpha1/scenario.schema.json, is missing or names a file that is
// not there. A file is never invalid for it, so run and lint accept the same
// files.
package scenario

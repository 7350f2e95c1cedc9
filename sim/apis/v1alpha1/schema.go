package v1alpha1

import _ "embed"

// Schema is the JSON schema of the format (scenario.schema.json), generated
// from the types of this package and the constraint markers on their
// fields (+enum, +minimum, ...) by hack/schemagen. The loader checks every
// file against it; editors read the file itself.
//
//go:embed scenario.schema.json
var Schema []byte

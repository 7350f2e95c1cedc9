package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v4"
)

// ErrParserFailed is the error of Documents when the parser panicked: it
// says nothing of where.
var ErrParserFailed = errors.New("the parser failed")

// Documents parses data, a stream of YAML documents, into the document node
// of each, with positions (line, column) in data: the one multi-document
// parser of files whose problems are reported by position (scenario files,
// the files explain and migrate read). Decode is the other reader, for
// objects as the API server's clients read them (YAML 1.1, numbers as
// int64 or float64).
//
// On a parse error it returns the documents before it and the parser's
// error; a panic of the parser (go.yaml.in/yaml/v4 is not ours) is an error
// too (ErrParserFailed), so that bad input never takes the caller down.
func Documents(data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrParserFailed, r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		doc := &yaml.Node{}
		if err := dec.Decode(doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, err
		}
		docs = append(docs, doc)
	}
}

// Empty reports whether doc (from Documents) holds nothing: no node, or a
// null (an empty document, or one that says null).
func Empty(doc *yaml.Node) bool {
	return len(doc.Content) == 0 || doc.Content[0].Tag == "!!null"
}

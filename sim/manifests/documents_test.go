package manifests

import (
	"errors"
	"slices"
	"testing"
)

// TestDocuments: every document of a stream, the empty ones included, with
// positions in the stream; the documents before a parse error come with it.
func TestDocuments(t *testing.T) {
	data := []byte("a: 1\n---\n---\nnull\n---\nkind: Pod\nmetadata:\n  name: p\n")
	docs, err := Documents(data)
	if err != nil {
		t.Fatal(err)
	}
	var empty []bool
	for _, d := range docs {
		empty = append(empty, Empty(d))
	}
	if want := []bool{false, true, true, false}; !slices.Equal(empty, want) {
		t.Fatalf("documents empty %v, want %v", empty, want)
	}
	if name := docs[3].Content[0].Content[3].Content[1]; name.Value != "p" || name.Line != 8 || name.Column != 9 {
		t.Errorf("metadata.name is %q at %d:%d, want \"p\" at 8:9 of the stream", name.Value, name.Line, name.Column)
	}

	docs, err = Documents([]byte("a: 1\n---\nb: [\n"))
	if err == nil || errors.Is(err, ErrParserFailed) || len(docs) != 1 {
		t.Errorf("a stream broken in its second document gave %d documents and %v, want the first and the parser's error", len(docs), err)
	}
}

package view

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"

	"google.golang.org/protobuf/encoding/protowire"
)

// A watch stream's encoding: JSON (what controller-runtime's clients ask
// for, and every custom resource's) or protobuf (what
// kube-controller-manager and kube-scheduler ask for of built-in
// resources). A view reads of each event its type and its object's kind,
// namespace, name and resourceVersion, and passes the frame on as the API
// server sent it, rewriting only the type when it coalesces.

// watchFrame is one watch event as read from the API server.
type watchFrame struct {
	raw  []byte // as the API server sent it, without its framing
	typ  string
	meta eventMeta
}

// eventMeta is what a view reads of an event's object.
type eventMeta struct {
	Kind, Namespace, Name, ResourceVersion string
}

// codec reads and writes the frames of one stream's encoding.
type codec interface {
	// read returns the next frame, io.EOF at a clean end.
	read() (watchFrame, error)
	// encode returns a frame, with its type set to typ, as the component
	// reads it (framing included).
	encode(f watchFrame, typ string) ([]byte, error)
}

// Watch streams' content types (the API server's, with ";stream=watch").
const (
	contentJSON     = "application/json"
	contentProtobuf = "application/vnd.kubernetes.protobuf"
)

// mediaType returns a content type's media type ("" stays "").
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType
	}
	return mt
}

// viewable reports whether a view can read a watch stream of a content
// type.
func viewable(contentType string) bool {
	switch mediaType(contentType) {
	case "", contentJSON, contentProtobuf:
		return true
	}
	return false
}

// newCodec returns the codec of a stream of a content type, reading body.
func newCodec(contentType string, body io.Reader) codec {
	if mediaType(contentType) == contentProtobuf {
		return &protoCodec{r: bufio.NewReader(body)}
	}
	return &jsonCodec{dec: json.NewDecoder(body)}
}

// jsonCodec reads newline-delimited JSON watch events.
type jsonCodec struct{ dec *json.Decoder }

// jsonFrame is a JSON watch event as the API server sends it.
type jsonFrame struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// jsonMeta is what a JSON codec reads of an event's object.
type jsonMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

func (c *jsonCodec) read() (watchFrame, error) {
	var raw json.RawMessage
	if err := c.dec.Decode(&raw); err != nil {
		return watchFrame{}, err
	}
	var f jsonFrame
	if err := json.Unmarshal(raw, &f); err != nil {
		return watchFrame{}, fmt.Errorf("failed to read a watch event: %w", err)
	}
	out := watchFrame{raw: raw, typ: f.Type}
	if f.Type == "ERROR" {
		return out, nil
	}
	var m jsonMeta
	if err := json.Unmarshal(f.Object, &m); err != nil {
		return watchFrame{}, fmt.Errorf("failed to read a watch event's object: %w", err)
	}
	out.meta = eventMeta{Kind: m.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name, ResourceVersion: m.Metadata.ResourceVersion}
	return out, nil
}

func (c *jsonCodec) encode(f watchFrame, typ string) ([]byte, error) {
	raw := f.raw
	if typ != f.typ {
		var jf jsonFrame
		if err := json.Unmarshal(f.raw, &jf); err != nil {
			return nil, err
		}
		jf.Type = typ
		var err error
		if raw, err = json.Marshal(jf); err != nil {
			return nil, err
		}
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		raw = append(bytes.Clone(raw), '\n')
	}
	return raw, nil
}

// protoCodec reads protobuf watch events: each frame a 4-byte big-endian
// length and a metav1.WatchEvent (type: field 1; object: field 2, a
// runtime.RawExtension whose raw, field 1, is the object in the API
// server's protobuf envelope: "k8s\x00" and a runtime.Unknown, whose
// typeMeta, field 1, holds the kind, field 2, and whose raw, field 2, the
// object, its ObjectMeta in field 1).
type protoCodec struct{ r *bufio.Reader }

// protoMagic starts every object in the API server's protobuf envelope.
var protoMagic = []byte("k8s\x00")

// maxProtoFrame bounds a frame's length as the API server's decoder does
// (16 MiB), so that a corrupt length is an error, not an allocation.
const maxProtoFrame = 16 << 20

func (c *protoCodec) read() (watchFrame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return watchFrame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxProtoFrame {
		return watchFrame{}, fmt.Errorf("a protobuf watch frame of %d bytes, more than %d", n, maxProtoFrame)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(c.r, raw); err != nil {
		return watchFrame{}, fmt.Errorf("failed to read a protobuf watch frame: %w", err)
	}
	f := watchFrame{raw: raw}
	event := fields(raw)
	if event == nil {
		return watchFrame{}, errors.New("failed to read a protobuf watch event")
	}
	f.typ = string(event[1])
	if f.typ == "ERROR" {
		return f, nil
	}
	object := fields(event[2])[1]
	if !bytes.HasPrefix(object, protoMagic) {
		return watchFrame{}, errors.New("a protobuf watch event's object lacks the k8s envelope")
	}
	unknown := fields(object[len(protoMagic):])
	f.meta.Kind = string(fields(unknown[1])[2])
	meta := fields(fields(unknown[2])[1])
	f.meta.Name, f.meta.Namespace, f.meta.ResourceVersion = string(meta[1]), string(meta[3]), string(meta[6])
	return f, nil
}

func (c *protoCodec) encode(f watchFrame, typ string) ([]byte, error) {
	body := f.raw
	if typ != f.typ {
		// The event's fields in their order, the type's replaced.
		var out []byte
		for b := f.raw; len(b) > 0; {
			num, wt, n := protowire.ConsumeTag(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			m := protowire.ConsumeFieldValue(num, wt, b[n:])
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			if num == 1 && wt == protowire.BytesType {
				out = protowire.AppendTag(out, 1, protowire.BytesType)
				out = protowire.AppendString(out, typ)
			} else {
				out = append(out, b[:n+m]...)
			}
			b = b[n+m:]
		}
		body = out
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(out, body...), nil
}

// fields returns a protobuf message's length-delimited fields by number
// (the last of a repeated one), nil when it cannot be read. A view reads
// only strings and messages, so the others are skipped.
func fields(b []byte) map[protowire.Number][]byte {
	out := map[protowire.Number][]byte{}
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if wt == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			out[num] = v
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, wt, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return out
}

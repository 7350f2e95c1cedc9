package view

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
)

// queued is an event a stream keeps back.
type queued struct {
	v     *viewState
	ev    *Event
	f     watchFrame
	typ   string    // f's type, or ADDED once coalesced
	key   string    // namespace/name
	due   time.Time // a delaying view's; zero for the others
	timer *time.Timer
}

// stream is one watch of a component, between the API server's response
// and the component.
type stream struct {
	reg             *Registry
	rt              *roundTripper
	req             *http.Request
	group, resource string
	contentType     string    // the API server's: JSON or protobuf
	opened          time.Time // when the component watched

	pr  *io.PipeReader
	pw  *io.PipeWriter
	out io.ReadCloser

	mu           sync.Mutex
	codec        codec         // of the body read now
	body         io.ReadCloser // the API server's, now
	queue        []*queued     // kept back, in the order they came
	pending      map[string]int
	lastRV       string
	end          []byte // the frame that ends the stream, kept behind the queue
	ended        bool   // the API server's stream ended and cannot resume
	clientClosed bool
	drained      chan struct{} // closed when the queue empties after the end
}

// outBody is what the component reads: the pipe, whose Close stops the
// stream.
type outBody struct {
	*io.PipeReader
	s *stream
}

func (b outBody) Close() error {
	// The pipe first: a write the component no longer reads returns.
	err := b.PipeReader.Close()
	b.s.closeByClient()
	return err
}

func newStream(rt *roundTripper, req *http.Request, group, resource, contentType string, body io.ReadCloser) *stream {
	pr, pw := io.Pipe()
	s := &stream{reg: rt.reg, rt: rt, req: req, group: group, resource: resource, contentType: contentType, opened: rt.reg.clock.Now(), pr: pr, pw: pw, body: body, pending: map[string]int{}}
	s.out = outBody{PipeReader: pr, s: s}
	s.reg.mu.Lock()
	s.reg.streams[s] = struct{}{}
	s.reg.mu.Unlock()
	go s.run()
	return s
}

// run reads the API server's events until the stream ends.
func (s *stream) run() {
	defer func() {
		s.reg.mu.Lock()
		delete(s.reg.streams, s)
		s.reg.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		body := s.body
		s.mu.Unlock()
		err := s.read(body)
		_ = body.Close()
		if s.closed() {
			s.abandon("the component stopped watching")
			return
		}
		if s.resume(err) {
			continue
		}
		s.finish(err)
		return
	}
}

// read reads events from body until it ends or an ERROR event ends the
// stream; it returns the error that ended it (io.EOF for a clean end).
func (s *stream) read(body io.Reader) error {
	c := newCodec(s.contentType, body)
	for {
		f, err := c.read()
		if err != nil {
			return err
		}
		if f.typ == "ERROR" {
			end, err := c.encode(f, f.typ)
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.end = end
			s.mu.Unlock()
			return errEnded
		}
		if err := s.event(c, f); err != nil {
			return err
		}
	}
}

// errEnded is read's error for an ERROR event: the stream cannot resume.
var errEnded = errors.New("the API server ended the watch with an error event")

// event passes one event on, or keeps it back; c is the codec that read
// it.
func (s *stream) event(c codec, f watchFrame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codec = c
	m := f.meta
	if rv := m.ResourceVersion; rv != "" {
		s.lastRV = rv
		defer s.reg.progressed()
	}
	if f.typ == "BOOKMARK" {
		return s.write(f, f.typ)
	}
	key := m.Namespace + "/" + m.Name
	var v *viewState
	if s.pending[key] > 0 {
		// Behind the object's earlier events, whatever views say now.
		for _, q := range s.queue {
			if q.key == key {
				v = q.v
			}
		}
	} else {
		v = s.reg.match(s, m.Namespace, m.Name)
	}
	if v == nil {
		return s.write(f, f.typ)
	}
	now := s.reg.clock.Now()
	q := &queued{v: v, f: f, typ: f.typ, key: key, ev: &Event{At: now, Type: f.typ, Object: m.Kind + "/" + m.Name, ResourceVersion: m.ResourceVersion}}
	s.reg.record(v, s, key, q.ev)
	s.queue = append(s.queue, q)
	s.pending[key]++
	if d := v.view.Delay; d > 0 {
		q.due = now.Add(d)
		q.timer = time.AfterFunc(d, func() { s.deliverDue(q) })
	}
	if v.view.OnEvent != nil {
		go v.view.OnEvent()
	}
	return nil
}

// write sends one frame, of type typ, to the component; s.mu is held.
func (s *stream) write(f watchFrame, typ string) error {
	b, err := s.codec.encode(f, typ)
	if err != nil {
		return err
	}
	_, err = s.pw.Write(b)
	return err
}

// release delivers what a view keeps back on this stream.
func (s *stream) release(v *viewState, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []*queued
	for _, q := range s.queue {
		if q.v == v {
			mine = append(mine, q)
		}
	}
	if len(mine) == 0 {
		return
	}
	if v.view.Coalesce {
		s.deliver(coalesce(mine), why)
		for _, q := range mine {
			if q.ev.Fate == "" {
				s.reg.settle(q.ev, time.Time{}, Coalesced)
				s.dequeue(q)
			}
		}
	} else {
		s.deliver(mine, why)
	}
	if v.view.OnEvent != nil {
		go v.view.OnEvent()
	}
	s.drainedLocked()
}

// deliverDue delivers a delaying view's event whose time has come, and the
// view's events due before it, in the order they came.
func (s *stream) deliverDue(q *queued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.ev.Fate != "" {
		return
	}
	var due []*queued
	for _, o := range s.queue {
		if o.v == q.v && !o.due.After(q.due) {
			due = append(due, o)
		}
	}
	s.deliver(due, fmt.Sprintf("delivered %s late (the view's delay)", q.v.view.Delay))
	if q.v.view.OnEvent != nil {
		go q.v.view.OnEvent()
	}
	s.drainedLocked()
}

// deliver sends kept-back events to the component, in order, and settles
// them; s.mu is held.
func (s *stream) deliver(qs []*queued, why string) {
	for _, q := range qs {
		if q.timer != nil {
			q.timer.Stop()
		}
		if err := s.write(q.f, q.typ); err != nil {
			s.reg.settle(q.ev, time.Time{}, "never delivered: "+err.Error())
		} else {
			s.reg.settle(q.ev, s.reg.clock.Now(), why)
		}
		s.dequeue(q)
	}
}

// dequeue removes an event from the queue; s.mu is held.
func (s *stream) dequeue(q *queued) {
	for i, o := range s.queue {
		if o == q {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.pending[q.key]--
			if s.pending[q.key] == 0 {
				delete(s.pending, q.key)
			}
			return
		}
	}
}

// coalesce returns, for events kept back in order, each object's last
// state: as ADDED when the component never saw the object (its first
// event kept back was ADDED), and nothing for an object added and deleted
// while kept back. The events come in the order of each object's last.
func coalesce(qs []*queued) []*queued {
	first := map[string]*queued{}
	last := map[string]int{}
	for i, q := range qs {
		if first[q.key] == nil {
			first[q.key] = q
		}
		last[q.key] = i
	}
	var out []*queued
	for i, q := range qs {
		if last[q.key] != i {
			continue
		}
		if first[q.key].f.typ == "ADDED" {
			if q.f.typ == "DELETED" {
				continue
			}
			q.typ = "ADDED"
		}
		out = append(out, q)
	}
	return out
}

// resume watches again from the last resourceVersion read when the API
// server ended the stream (a watch's timeout) while events are kept back,
// so that the component sees one stream; it reports whether it did.
func (s *stream) resume(err error) bool {
	s.mu.Lock()
	keeping, rv := len(s.queue) > 0, s.lastRV
	s.mu.Unlock()
	if !keeping || rv == "" || !errors.Is(err, io.EOF) {
		return false
	}
	req := s.req.Clone(s.req.Context())
	q := req.URL.Query()
	q.Set("resourceVersion", rv)
	q.Del("sendInitialEvents")
	q.Del("resourceVersionMatch")
	req.URL.RawQuery = q.Encode()
	resp, rerr := s.rt.next.RoundTrip(req)
	if rerr != nil {
		return false
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header.Get("Content-Type")) != mediaType(s.contentType) {
		_ = resp.Body.Close()
		return false
	}
	s.mu.Lock()
	s.body = resp.Body
	s.mu.Unlock()
	return true
}

// behind says, for each of objects whose change at the resourceVersion
// current gives the stream has not read yet, how far it has read; nothing
// once the stream ended.
func (s *stream) behind(objects sets.Set[string], current map[string]string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.clientClosed {
		return nil
	}
	var out []string
	for _, key := range sets.List(objects) {
		rv, ok := current[key]
		if !ok {
			continue
		}
		if c, err := resourceversion.CompareResourceVersion(s.lastRV, rv); err == nil && c >= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s's watch of %s has read up to resourceVersion %s, %s is at %s", s.rt.component, s.resource, cmpOr(s.lastRV, "none"), key, rv))
	}
	return out
}

// finish ends the component's stream once what it keeps back is
// delivered: the API server's ERROR event, if any, then the end.
func (s *stream) finish(err error) {
	defer s.reg.progressed()
	s.mu.Lock()
	s.ended = true
	s.drained = make(chan struct{})
	drained := s.drained
	s.drainedLocked()
	s.mu.Unlock()
	<-drained
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientClosed {
		return
	}
	if s.end != nil {
		_, _ = s.pw.Write(s.end)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, errEnded) {
		err = nil
	}
	_ = s.pw.CloseWithError(err)
}

// drainedLocked closes drained when the stream ended and keeps nothing
// back; s.mu is held.
func (s *stream) drainedLocked() {
	if s.ended && len(s.queue) == 0 && s.drained != nil {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

// cut ends the stream for the component as a connection the network cut
// ends: what it keeps back is never delivered.
func (s *stream) cut() {
	s.mu.Lock()
	s.abandonLocked("the view cut the component off")
	body := s.body
	s.clientClosed = true // nothing more reaches the component
	s.mu.Unlock()
	_ = s.pw.CloseWithError(io.ErrUnexpectedEOF)
	_ = body.Close()
}

// closeByClient stops the stream: the component closed it.
func (s *stream) closeByClient() {
	s.mu.Lock()
	s.clientClosed = true
	body := s.body
	if s.ended {
		// finish waits for the queue: nobody reads it any more.
		s.abandonLocked("the component stopped watching")
		s.drainedLocked()
	}
	s.mu.Unlock()
	_ = body.Close()
}

// closed reports whether the component closed the stream.
func (s *stream) closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientClosed
}

// abandon settles what the stream keeps back as never delivered.
func (s *stream) abandon(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abandonLocked(why)
	_ = s.pw.Close()
}

// abandonLocked is abandon without the pipe's close; s.mu is held.
func (s *stream) abandonLocked(why string) {
	for _, q := range s.queue {
		if q.timer != nil {
			q.timer.Stop()
		}
		s.reg.settle(q.ev, time.Time{}, "never delivered: "+why)
	}
	s.queue, s.pending = nil, map[string]int{}
}

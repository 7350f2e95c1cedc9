package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
)

// What a 409 Conflict lost to: the writes that changed the object after the
// resourceVersion a refused request carried, from the scenario's own writes
// and the components' writes the API server's audit log records (with
// their resourceVersions, for TrainJobs).

// ownWrite is a write of the scenario the server accepted.
type ownWrite struct {
	kind, name string
	// who wrote it (an actor, or the harness), verb, and the
	// resourceVersion it wrote.
	who, verb, rv string
	// at is when the server answered.
	at time.Time
}

// recordOwn keeps an accepted write for conflictChanges.
func (s *scenarioRun) recordOwn(p *prepared) {
	w := &p.write
	kind, name := p.target.kind, p.target.name
	if p.target.selector != "" || w.ResourceVersionAfter == "" {
		return
	}
	who := "the harness"
	if w.Actor != "" {
		who = "actor " + w.Actor
	}
	s.mu.Lock()
	s.own = append(s.own, ownWrite{kind: kind, name: name, who: who, verb: w.Verb, rv: w.ResourceVersionAfter, at: w.Started.Add(w.Duration)})
	s.mu.Unlock()
}

// conflictChanges names what changed the object of a write refused with a
// conflict since the resourceVersion it carried.
func (s *scenarioRun) conflictChanges(p *prepared) []string {
	w := &p.write
	kind, name := p.target.kind, p.target.name
	if p.target.selector != "" {
		return nil
	}
	s.mu.Lock()
	own := slices.Clone(s.own)
	s.mu.Unlock()
	var reqs []cluster.ComponentRequest
	if auditing, ok := s.cluster.(cluster.RequestAuditing); ok && kind == "TrainJob" {
		var err error
		if reqs, err = auditing.ComponentRequests(s.ns); err != nil {
			// What is known is still said, with why the rest is not.
			return append(changedBy(kind, name, w.ResourceVersionBefore, s.clock.Now(), own, nil),
				fmt.Sprintf("(the components' writes are unknown: failed to read the API server's audit log: %v)", err))
		}
	}
	return changedBy(kind, name, w.ResourceVersionBefore, s.clock.Now(), own, reqs)
}

// change is one write that changed an object, at the resourceVersion rv.
type change struct {
	rv   uint64
	at   time.Time
	text string
}

// changedBy returns the writes of own and reqs (TrainJobs' only) to the
// object of kind and name answered by the time refused, that wrote a
// resourceVersion after since, oldest first, as "who's verb
// (resourceVersion N)". A write that changed nothing answers with the
// resourceVersion the object had: only the first write of each version is
// named. Nil when since is not a number.
func changedBy(kind, name, since string, refused time.Time, own []ownWrite, reqs []cluster.ComponentRequest) []string {
	after, err := strconv.ParseUint(since, 10, 64)
	if err != nil {
		return nil
	}
	var changes []change
	add := func(rv string, at time.Time, text string) {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > after && !at.After(refused) {
			changes = append(changes, change{n, at, fmt.Sprintf("%s (resourceVersion %s)", text, rv)})
		}
	}
	for _, w := range own {
		if w.kind == kind && w.name == name {
			add(w.rv, w.at, fmt.Sprintf("%s's %s", w.who, w.verb))
		}
	}
	if kind == "TrainJob" {
		for _, r := range reqs {
			if r.Resource != "trainjobs" || r.Name != name || r.Code >= 300 {
				continue
			}
			resource := r.Resource
			if r.Subresource != "" {
				resource += "/" + r.Subresource
			}
			add(r.ResourceVersion, r.At, fmt.Sprintf("%s's %s of %s", r.Component, r.Verb, resource))
		}
	}
	slices.SortFunc(changes, func(a, b change) int {
		switch {
		case a.rv != b.rv && a.rv < b.rv:
			return -1
		case a.rv != b.rv:
			return 1
		}
		return a.at.Compare(b.at)
	})
	var out []string
	for i, c := range changes {
		if i == 0 || c.rv != changes[i-1].rv {
			out = append(out, c.text)
		}
	}
	return out
}

// lostTo says what a conflict lost to, for a message: "; the object
// changed since resourceVersion 5: a, b", or that nothing recorded did.
func lostTo(w *results.Write) string {
	if w.Reason != "Conflict" || w.ResourceVersionBefore == "" {
		return ""
	}
	if len(w.ChangedBy) == 0 {
		return fmt.Sprintf("; no write of the scenario or of a component recorded in the audit log changed it since resourceVersion %s", w.ResourceVersionBefore)
	}
	return fmt.Sprintf("; the object changed since resourceVersion %s: %s", w.ResourceVersionBefore, strings.Join(w.ChangedBy, ", "))
}

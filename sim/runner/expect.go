package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/probe"
)

// step runs one step and reports it.
func (s *scenarioRun) step(ctx context.Context, st *v1alpha1.Step) (res results.Step) {
	verb, hasVerb := v1alpha1.VerbOf(st)
	res = results.Step{Name: st.Name, Kind: verb.Name, Started: s.clock.Now()}
	if !hasVerb {
		res.Kind = expectStep
		if st.Release != nil {
			res.Kind = releaseStep
		}
	}
	defer func() { res.Duration = s.clock.Since(res.Started) }()
	var cases []*v1alpha1.InterleavingCase // interleaving cases of this order
	fail := func(msg, diff string) results.Step {
		res.Failure, res.Diff = msg, diff
		return res
	}
	if st.Release != nil {
		if msg := s.release(ctx, st.Name, st.Release); msg != "" {
			return fail(msg, "")
		}
	}
	switch {
	case !hasVerb:
	case verb.Group:
		var il *Interleaving
		if s.interleaving != nil && s.interleaving.Step == st.Name {
			il = s.interleaving
			res.Order = il.Names
		}
		sent := s.clock.Now()
		writes, problems, matched := s.concurrently(ctx, st.Concurrently, il)
		s.breakdown.Writes += s.clock.Since(sent)
		res.Writes = writes
		cases = matched
		for _, c := range cases {
			res.Cases = append(res.Cases, c.Name)
		}
		if len(problems) > 0 {
			return fail(strings.Join(problems, "\n"), "")
		}
	default:
		p, err := s.prepare(st)
		if err != nil {
			return fail(err.Error(), "")
		}
		sent := s.clock.Now()
		writeErr := s.send(ctx, p, st.Name)
		s.breakdown.Writes += s.clock.Since(sent)
		outcome := checkOutcome(&p.write, writeErr, st.ExpectError)
		res.Writes = []results.Write{p.write}
		if outcome != nil {
			return fail(outcome.Error(), "")
		}
	}
	if st.Expect != nil {
		if msg, diff := s.expectTimed(ctx, st.Expect); msg != "" {
			return fail(msg, diff)
		}
	}
	for _, c := range cases {
		if c.Expect == nil {
			continue
		}
		if msg, diff := s.expectTimed(ctx, c.Expect); msg != "" {
			return fail(fmt.Sprintf("case %q: %s", c.Name, msg), diff)
		}
	}
	if s.sc.Spec.Strict {
		if msg := s.checkStrict(ctx); msg != "" {
			return fail(msg, "")
		}
	}
	res.Passed = true
	return res
}

// expectTimed is expect, its time added to the breakdown: on the lane of
// the last reaction observed while it waited.
func (s *scenarioRun) expectTimed(ctx context.Context, e *v1alpha1.Expect) (string, string) {
	start := s.clock.Now()
	msg, diff := s.expect(ctx, e)
	end := s.clock.Now()
	lane := s.watch.lastLane(start, end)
	if lane == "" {
		lane = results.WaitingOnNothing
	}
	s.breakdown.Wait(lane, end.Sub(start))
	return msg, diff
}

// expect checks every expectation of e until all hold or e.Within passes:
// again whenever something changes in the scenario's namespace, and every
// safetyPollInterval. It returns the last failure and its diff.
func (s *scenarioRun) expect(ctx context.Context, e *v1alpha1.Expect) (string, string) {
	within := e.Within.Duration
	if within == 0 {
		within = v1alpha1.DefaultWithin
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	poll := time.NewTicker(safetyPollInterval)
	defer poll.Stop()
	defer s.trackReached(ctx, e, s.get)()
	for {
		msg, diff := s.checkOnce(ctx, e, s.fresh(ctx))
		if msg == "" {
			return "", ""
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("%v while waiting: %s", ctx.Err(), msg), diff
		case <-deadline.C:
			if msg, diff = s.checkOnce(ctx, e, s.fresh(ctx)); msg == "" {
				return "", ""
			}
			return fmt.Sprintf("not true within %s: %s", within, msg), diff
		case <-s.watch.changed:
		case <-poll.C:
		}
	}
}

// expectStep is the kind of a step without a verb, in reports.
const expectStep = "expect"

// releaseStep is the kind of a step that only releases a gate (and may
// expect), in reports.
const releaseStep = "release"

// checker checks one kind of expectation of e once, reading from the
// watches when cached; it returns the failure and its diff.
type checker func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string)

// checkers are the runner's side of every kind of v1alpha1.Expectations.
var checkers = map[string]checker{
	"pods": func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
		return s.checkPods(ctx, e.Pods, cached)
	},
	"objects": func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
		for i := range e.Objects {
			if msg, diff := s.checkObject(ctx, &e.Objects[i], cached); msg != "" {
				return msg, diff
			}
		}
		return "", ""
	},
	"events": func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
		for i := range e.Events {
			if msg := s.checkEvent(ctx, &e.Events[i], cached); msg != "" {
				return msg, ""
			}
		}
		return "", ""
	},
	"owners": func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
		for i := range e.Owners {
			if msg, diff := s.checkOwner(ctx, &e.Owners[i], cached); msg != "" {
				return msg, diff
			}
		}
		return "", ""
	},
	"noOverlaps": func(s *scenarioRun, ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
		return s.checkNoOverlaps(ctx, e.NoOverlaps, cached), ""
	},
	"requests": func(s *scenarioRun, _ context.Context, e *v1alpha1.Expect, _ bool) (string, string) {
		return s.checkRequests(e.Requests), ""
	},
	"holding": func(s *scenarioRun, _ context.Context, e *v1alpha1.Expect, _ bool) (string, string) {
		return s.holding(e.Holding), ""
	},
	"held": func(s *scenarioRun, _ context.Context, e *v1alpha1.Expect, _ bool) (string, string) {
		return s.checkHeld(e.Held), ""
	},
}

// HandlesExpectation reports whether the runner checks the expectation
// kind of a name: true for every kind of v1alpha1.Expectations.
func HandlesExpectation(name string) bool { return checkers[name] != nil }

// checkOnce checks every expectation of e once, in the order of
// v1alpha1.Expectations, reading from the watches when cached.
func (s *scenarioRun) checkOnce(ctx context.Context, e *v1alpha1.Expect, cached bool) (string, string) {
	for _, k := range v1alpha1.Expectations {
		if !k.In(e) {
			continue
		}
		check := checkers[k.Name]
		if check == nil {
			return fmt.Sprintf("the runner cannot check %s", k.Name), ""
		}
		if msg, diff := check(s, ctx, e, cached); msg != "" {
			return msg, diff
		}
	}
	return "", ""
}

// pods lists the scenario's Pods matching the selector, isolation removed.
func (s *scenarioRun) pods(ctx context.Context, sel *v1alpha1.LabelSelector, cached bool) ([]*podView, error) {
	var selector map[string]string
	if sel != nil {
		selector = sel.MatchLabels
	}
	pods, err := s.podViews(ctx, selector, cached)
	if err != nil {
		return nil, fmt.Errorf("failed to list pods: %w", err)
	}
	return pods, nil
}

// seedProfiles records the profile of each of the scenario's own nodes
// among names, as its group gave it (a group's labels may set the profile
// label only to its profile), so that nodeProfile reads none of them.
func (s *scenarioRun) seedProfiles(names []string) {
	created := make(map[string]bool, len(names))
	for _, n := range names {
		created[n] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, g := range s.sc.Spec.Nodes {
		for idx := range g.Count {
			if name := s.nodeName(v1alpha1.NodeRef{Group: i, Index: idx}); created[name] {
				s.profiles[name] = g.Profile
			}
		}
	}
}

// nodeProfile is the fakegpu profile of a node, read once per node that is
// not the scenario's own (seedProfiles): a profile label never changes.
func (s *scenarioRun) nodeProfile(ctx context.Context, name string) string {
	if name == "" {
		return ""
	}
	s.mu.Lock()
	profile, ok := s.profiles[name]
	s.mu.Unlock()
	if ok {
		return profile
	}
	n := &corev1.Node{}
	if err := s.cluster.Client().Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return ""
	}
	profile = n.Labels[fakegpu.ProfileLabel]
	s.mu.Lock()
	s.profiles[name] = profile
	s.mu.Unlock()
	return profile
}

func (s *scenarioRun) checkPods(ctx context.Context, want *v1alpha1.PodExpectation, cached bool) (string, string) {
	pods, err := s.pods(ctx, want.Selector, cached)
	if err != nil {
		return err.Error(), ""
	}
	if want.Count != nil && len(pods) != *want.Count {
		return fmt.Sprintf("%d pods, want %d", len(pods), *want.Count), "pod count mismatch (-want +got):\n" + cmp.Diff(*want.Count, len(pods))
	}
	exact, err := parseExact(want.Exact)
	if err != nil {
		return "pods: " + err.Error(), ""
	}
	anyMatched := want.Any == nil
	var anyDiff string
	for _, v := range pods {
		p := &v.pod
		if want.Phase != "" && string(p.Status.Phase) != want.Phase {
			return fmt.Sprintf("pod %s is %s, want %s%s", p.Name, p.Status.Phase, want.Phase, schedulingNote(p)), ""
		}
		if want.NodeProfile != "" {
			if got := s.nodeProfile(ctx, p.Spec.NodeName); got != want.NodeProfile {
				return fmt.Sprintf("pod %s is on node %q of profile %q, want profile %q%s", p.Name, p.Spec.NodeName, got, want.NodeProfile, schedulingNote(p)), ""
			}
		}
		if want.SchedulingReason != "" {
			cond := probe.PodScheduledCondition(p)
			if cond == nil || !strings.Contains(cond.Reason+": "+cond.Message, want.SchedulingReason) {
				got := "no PodScheduled condition"
				if cond != nil {
					got = cond.Reason + ": " + cond.Message
				}
				return fmt.Sprintf("pod %s scheduling is %q, want it to contain %q", p.Name, got, want.SchedulingReason), ""
			}
		}
		obj := v.obj
		if want.All != nil {
			if ok, diff := partialMatch(map[string]any(want.All), obj, exact); !ok {
				return fmt.Sprintf("pod %s does not match pods.all", p.Name), fmt.Sprintf("pod %s mismatch (-want +got):\n%s", p.Name, diff)
			}
		}
		if !anyMatched {
			ok, diff := partialMatch(map[string]any(want.Any), obj, exact)
			anyMatched = ok
			if anyDiff == "" {
				anyDiff = fmt.Sprintf("pod %s mismatch (-want +got):\n%s", p.Name, diff)
			}
		}
	}
	if !anyMatched {
		return fmt.Sprintf("none of %d pods matches pods.any", len(pods)), anyDiff
	}
	return "", ""
}

func schedulingNote(p *corev1.Pod) string {
	if cond := probe.PodScheduledCondition(p); cond != nil && cond.Status != corev1.ConditionTrue {
		return fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
	}
	return ""
}

func (s *scenarioRun) checkObject(ctx context.Context, want *v1alpha1.ObjectExpectation, cached bool) (string, string) {
	t := want.Target
	var unknown error
	if want.Reached {
		hit, err := s.hasReached(want)
		if hit {
			return "", ""
		}
		unknown = err
	}
	got, err := s.read(ctx, t, cached)
	if want.Absent {
		if apierrors.IsNotFound(err) {
			return "", ""
		}
		if err != nil {
			return err.Error(), ""
		}
		return fmt.Sprintf("%s %s exists, want it absent", t.Kind, t.Name), ""
	}
	if err != nil {
		return fmt.Sprintf("failed to get %s %s: %v", t.Kind, t.Name, err), ""
	}
	msg, diff := objectMismatch(want, got.Object)
	switch {
	case msg == "" || !want.Reached:
	case unknown != nil:
		msg += fmt.Sprintf("; whether it did in a state since the step began to check it is unknown: %v", unknown)
	default:
		msg += ", nor did it in any state since the step began to check it"
	}
	return msg, diff
}

// objectMismatch is how obj fails want's match and matchAny, with the
// diff; "" when it matches (or want asks only that it exists).
func objectMismatch(want *v1alpha1.ObjectExpectation, obj map[string]any) (string, string) {
	t := want.Target
	if want.Match == nil && len(want.MatchAny) == 0 {
		return "", "" // it exists
	}
	exact, err := parseExact(want.Exact)
	if err != nil {
		return fmt.Sprintf("%s %s: %v", t.Kind, t.Name, err), ""
	}
	if want.Match != nil {
		if ok, diff := partialMatch(map[string]any(want.Match), obj, exact); !ok {
			return fmt.Sprintf("%s %s does not match", t.Kind, t.Name), fmt.Sprintf("%s %s mismatch (-want +got):\n%s", t.Kind, t.Name, diff)
		}
	}
	if len(want.MatchAny) == 0 {
		return "", ""
	}
	// The diff shown is against the alternative it is closest to.
	closest := ""
	for _, alt := range want.MatchAny {
		ok, diff := partialMatch(map[string]any(alt), obj, exact)
		if ok {
			return "", ""
		}
		if closest == "" || len(diff) < len(closest) {
			closest = diff
		}
	}
	return fmt.Sprintf("%s %s matches none of the %d objects of matchAny", t.Kind, t.Name, len(want.MatchAny)),
		fmt.Sprintf("%s %s mismatch with the closest of matchAny (-want +got):\n%s", t.Kind, t.Name, closest)
}

func (s *scenarioRun) checkEvent(ctx context.Context, want *v1alpha1.EventExpectation, cached bool) string {
	events, err := s.listEvents(ctx, cached)
	if err != nil {
		return fmt.Sprintf("failed to list events: %v", err)
	}
	// The loader has compiled it.
	matches := regexp.MustCompile(want.MessageMatches)
	for _, ev := range events {
		if (want.InvolvedKind == "" || ev.InvolvedObject.Kind == want.InvolvedKind) &&
			(want.InvolvedName == "" || ev.InvolvedObject.Name == want.InvolvedName) &&
			(want.Reason == "" || ev.Reason == want.Reason) &&
			strings.Contains(ev.Message, want.MessageContains) &&
			matches.MatchString(ev.Message) {
			return ""
		}
	}
	var seen []string
	for _, ev := range events {
		seen = append(seen, fmt.Sprintf("%s/%s %s: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message))
	}
	return fmt.Sprintf("no event %s; events seen: %s", describe(want), strings.Join(seen, "; "))
}

// finalPods summarizes the scenario's Pods for the report.
func (s *scenarioRun) finalPods(ctx context.Context) []results.Pod {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := s.pods(ctx, nil, s.fresh(ctx))
	if err != nil {
		return nil // the report then shows no final Pods
	}
	out := make([]results.Pod, 0, len(pods))
	for _, v := range pods {
		p := &v.pod
		out = append(out, results.Pod{
			Name:        p.Name,
			Phase:       string(p.Status.Phase),
			Node:        p.Spec.NodeName,
			NodeProfile: s.nodeProfile(ctx, p.Spec.NodeName),
			Scheduling:  strings.TrimPrefix(schedulingNote(p), " "),
			JobSet:      p.Labels["jobset.sigs.k8s.io/jobset-name"],
		})
	}
	return out
}

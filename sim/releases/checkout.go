package releases

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// trainerCheckout is set by make build and make test TRAINER_DIR=... with
// -ldflags -X to what hack/checkoutversion found out about the Trainer
// checkout they built against: "dir=...;describe=...;commit=...;time=...;
// base=...;from=...;exact=...". Empty: the binary was built without it.
var trainerCheckout string

// kueueCheckout is the same for a Kueue checkout, set by make build and
// make test KUEUE_DIR=..., which build the Kueue component from it, with
// its CRDs, webhooks and RBAC, into the directory of the field "bin"
// (bin/kueue/checkout/).
var kueueCheckout string

// How a checkout's release was found.
const (
	FromGitTags       = "git-tags"
	FromModuleVersion = "module-version"
	FromTrainerAs     = "trainer-as"
)

// Checkout is a local checkout of the Trainer (or of Kueue) that simctl
// was built against instead of the pinned release, and the release it is
// run as.
type Checkout struct {
	// Of is what it is a checkout of: "Trainer" or "Kueue".
	Of string
	// Dir is the checkout's directory; empty when a go.work or a replace
	// was set up by hand, not by make.
	Dir string
	// Describe, Commit and Time say which commit it was built at; empty
	// for a directory that is not a git checkout.
	Describe, Commit, Time string
	// Base is the release it descends from, vX.Y.Z; empty when not known.
	Base string
	// From says how Base was found: FromGitTags, FromModuleVersion or
	// FromTrainerAs.
	From string
	// Exact is true when the checkout is the release's own tagged commit,
	// unchanged: it is run as that release, not as newer.
	Exact bool
	// Bin is, for a Kueue checkout, the directory make built it into: the
	// kueue binary, crds/, webhooks.yaml and rbac.yaml.
	Bin string
}

// TrainerCheckout returns the checkout the Trainer compiled into this
// binary was built from, and false when it is the pinned release.
func TrainerCheckout() (Checkout, bool) {
	devel, isDevel := strings.CutPrefix(ModuleVersion(TrainerModule), "(devel)")
	if trainerCheckout == "" && !isDevel {
		return Checkout{}, false
	}
	c := ParseCheckout("Trainer", trainerCheckout)
	if devel = strings.TrimSpace(devel); c.Dir == "" && isDevel && !strings.HasPrefix(devel, "from ") {
		c.Dir = devel // a replace directive's directory
	}
	return c, true
}

// KueueCheckout returns the Kueue checkout the Kueue component runs from
// (make build KUEUE_DIR=...), and false when it runs the pinned release.
func KueueCheckout() (Checkout, bool) {
	if kueueCheckout == "" {
		return Checkout{}, false
	}
	return ParseCheckout("Kueue", kueueCheckout), true
}

// ParseCheckout reads hack/checkoutversion's "dir=...;base=...;..." form
// of a checkout of of ("Trainer", "Kueue").
func ParseCheckout(of, s string) Checkout {
	f := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return Checkout{
		Of: of, Dir: f["dir"], Describe: f["describe"], Commit: f["commit"], Time: f["time"],
		Base: f["base"], From: f["from"], Exact: f["exact"] == "true", Bin: f["bin"],
	}
}

// ErrCheckoutRelease is the refusal to run a checkout whose release is not
// known.
var ErrCheckoutRelease = errors.New("give the release it descends from with --trainer-as vX.Y.Z (make run TRAINER_AS=vX.Y.Z)")

// As returns the checkout run as a descendant of release (--trainer-as);
// an empty release keeps the one found at build time. It fails when the
// release is not a version such as v2.3.0, or when none is known.
func (c Checkout) As(release string) (Checkout, error) {
	if release != "" {
		if !strings.HasPrefix(release, "v") {
			release = "v" + release
		}
		if !semver.IsValid(release) || semver.Canonical(release) != release || semver.Prerelease(release) != "" {
			return c, fmt.Errorf("invalid --trainer-as %q: a release such as %s", release, TrainerVersion)
		}
		c.Base, c.From, c.Exact = release, FromTrainerAs, false
	}
	if c.Base == "" {
		return c, fmt.Errorf("simctl was built against the Trainer checkout %s, whose release is not known (no release tag vX.Y.Z in its git history, no module version in its path): %w", c.where(), ErrCheckoutRelease)
	}
	return c, nil
}

// Version is the version the checkout is run as for version ranges: its
// release when it is that release's tagged commit, else the Go
// pseudo-version of a commit after that release (v2.3.1-0.20261126061700-
// 0123456789ab, or v2.3.1-0.checkout without git), which is newer than the
// release and older than the next. Empty when the release is not known.
func (c Checkout) Version() string {
	if c.Base == "" {
		return ""
	}
	if c.Exact {
		return c.Base
	}
	next := nextPatch(c.Base)
	if c.Time != "" && c.Commit != "" {
		return next + "-0." + c.Time + "-" + c.Commit
	}
	return next + "-0.checkout"
}

// String says in one line what runs: "the Trainer checkout /src/trainer
// (v1.5.0-rc.0-1092-g8c0f5059b), run as newer than v2.3.0 (from its git
// tags)".
func (c Checkout) String() string {
	s := "the " + c.Of + " checkout " + c.where()
	if c.Describe != "" {
		s += " (" + c.Describe + ")"
	}
	if c.Base == "" {
		return s + ", release not known"
	}
	how := map[string]string{
		FromGitTags:       "from its git tags",
		FromModuleVersion: "from its module version",
		FromTrainerAs:     "from --trainer-as",
	}[c.From]
	if c.Exact {
		return fmt.Sprintf("%s, run as %s, the release it is (%s)", s, c.Base, how)
	}
	return fmt.Sprintf("%s, run as newer than %s (%s)", s, c.Base, how)
}

func (c Checkout) where() string {
	if c.Dir == "" {
		return "of a go.work or replace made by hand"
	}
	return c.Dir
}

// nextPatch returns vX.Y.(Z+1) for a release vX.Y.Z.
func nextPatch(release string) string {
	parts := strings.SplitN(strings.TrimPrefix(semver.Canonical(release), "v"), ".", 3)
	if len(parts) != 3 {
		return release
	}
	var patch int
	fmt.Sscan(parts[2], &patch)
	return fmt.Sprintf("v%s.%s.%d", parts[0], parts[1], patch+1)
}

// CompiledTrainerVersion is the version, for version ranges, of the Trainer
// compiled into this binary run as a descendant of as (--trainer-as, empty:
// as built): the pinned release, or the checkout's Version. Empty for a
// checkout whose release is not known.
func CompiledTrainerVersion(as string) string {
	c, ok := TrainerCheckout()
	if !ok {
		return TrainerVersion
	}
	c, err := c.As(as)
	if err != nil {
		return ""
	}
	return c.Version()
}

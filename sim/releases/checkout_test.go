package releases

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckoutVersion: a checkout runs as newer than its release (a Go
// pseudo-version after it, or -0.checkout without git) unless it is the
// release's own clean tagged commit; --trainer-as replaces the release.
func TestCheckoutVersion(t *testing.T) {
	git := ParseCheckout("Trainer", "dir=/src/trainer;describe=v1.5.0-rc.0-1092-g8c0f5059b;commit=8c0f5059bd51;time=20260821142538;base=v2.3.0;from=git-tags;exact=false")
	for _, tc := range []struct {
		name string
		c    Checkout
		as   string
		want string
		line string
	}{
		{"git", git, "", "v2.3.1-0.20260821142538-8c0f5059bd51", "the Trainer checkout /src/trainer (v1.5.0-rc.0-1092-g8c0f5059b), run as newer than v2.3.0 (from its git tags)"},
		{"trainer-as", git, "2.2.1", "v2.2.2-0.20260821142538-8c0f5059bd51", "run as newer than v2.2.1 (from --trainer-as)"},
		{"module", ParseCheckout("Trainer", "dir=/mod/trainer/v2@v2.2.0;base=v2.2.0;from=module-version"), "", "v2.2.1-0.checkout", "run as newer than v2.2.0 (from its module version)"},
		{"exact", ParseCheckout("Trainer", "dir=/src/trainer;describe=v2.2.1;commit=5c2a04d6f659;time=20260625194746;base=v2.2.1;from=git-tags;exact=true"), "", "v2.2.1", "run as v2.2.1, the release it is (from its git tags)"},
		{"exact as another", ParseCheckout("Trainer", "dir=/src/trainer;base=v2.2.1;from=git-tags;exact=true"), "v2.3.0", "v2.3.1-0.checkout", "newer than v2.3.0 (from --trainer-as)"},
	} {
		c, err := tc.c.As(tc.as)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.Version(); got != tc.want {
			t.Errorf("%s: Version() = %q, want %q", tc.name, got, tc.want)
		}
		if got := c.String(); !strings.Contains(got, tc.line) {
			t.Errorf("%s: String() = %q, want it to hold %q", tc.name, got, tc.line)
		}
	}
}

// TestCheckoutReleaseRequired: a checkout whose release is not known, and
// a --trainer-as that is not a release, are refused with what to give.
func TestCheckoutReleaseRequired(t *testing.T) {
	c := ParseCheckout("Trainer", "dir=/src/trainer;describe=8c0f5059b;commit=8c0f5059bd51;time=20260821142538")
	_, err := c.As("")
	if !errors.Is(err, ErrCheckoutRelease) || !strings.Contains(err.Error(), "/src/trainer") {
		t.Errorf("As(\"\") = %v, want ErrCheckoutRelease naming the checkout", err)
	}
	if c.Version() != "" {
		t.Errorf("Version() = %q without a release", c.Version())
	}
	for _, bad := range []string{"main", "v2.3", "v2.3.0-rc.1", "v2.3.0+x"} {
		if _, err := c.As(bad); err == nil || !strings.Contains(err.Error(), "invalid --trainer-as") {
			t.Errorf("As(%q) = %v, want invalid --trainer-as", bad, err)
		}
	}
}

// TestCompiledTrainer: a binary built from the pinned module has no
// checkout and runs as the pinned release; one built by make with
// TRAINER_DIR knows its checkout's directory.
func TestCompiledTrainer(t *testing.T) {
	c, ok := TrainerCheckout()
	if trainerCheckout != "" {
		if !ok || c.Dir == "" {
			t.Errorf("TrainerCheckout() = %+v, %v in a build against a checkout", c, ok)
		}
		return
	}
	if ok {
		t.Errorf("TrainerCheckout() = %+v, true in a build of the pinned module", c)
	}
	if got := CompiledTrainerVersion(""); got != TrainerVersion {
		t.Errorf("CompiledTrainerVersion(\"\") = %q, want %s", got, TrainerVersion)
	}
}

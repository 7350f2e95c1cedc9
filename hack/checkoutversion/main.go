// Command checkoutversion says which release a local checkout of the
// Trainer or of Kueue descends from, for make build, make test and make
// assets with TRAINER_DIR or KUEUE_DIR: simctl runs a checkout as newer
// than that release (sim/releases.Checkout).
//
//	checkoutversion DIR                 dir=...;describe=...;commit=...;time=...;base=...;from=...;exact=...
//	checkoutversion -field describe DIR one field
//
// The release comes from the checkout's git tags, else from a module
// version in its path (a copy of the module cache's
// github.com/kubeflow/trainer/v2@v2.3.0), else it is not known (base
// empty: simctl then asks for --trainer-as). Which tag: upstream tags each
// release on its release branch, so a commit of the main branch has no
// release tag in its history. The release a commit descends from is the
// release tag whose common ancestor with the commit is nearest to it (the
// fewest commits between them), the newest release among those: on the
// main branch, the newest release branched from it before the commit; on a
// release branch, the newest release tagged on it before the commit.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

func main() {
	field := flag.String("field", "", "print only this field: dir, describe, commit, time, base, from or exact")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: checkoutversion [-field NAME] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	c, err := find(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "checkoutversion: %v\n", err)
		os.Exit(1)
	}
	if *field == "" {
		fmt.Println(c.encode())
		return
	}
	v, ok := c.fields()[*field]
	if !ok {
		fmt.Fprintf(os.Stderr, "checkoutversion: unknown field %q\n", *field)
		os.Exit(2)
	}
	fmt.Println(v)
}

// checkout is what find learns; sim/releases parses encode's form.
type checkout struct {
	dir, describe, commit, time, base, from string
	exact                                   bool
}

var fieldOrder = []string{"dir", "describe", "commit", "time", "base", "from", "exact"}

func (c checkout) fields() map[string]string {
	return map[string]string{
		"dir": c.dir, "describe": c.describe, "commit": c.commit, "time": c.time,
		"base": c.base, "from": c.from, "exact": strconv.FormatBool(c.exact),
	}
}

func (c checkout) encode() string {
	f := c.fields()
	parts := make([]string, len(fieldOrder))
	for i, k := range fieldOrder {
		parts[i] = k + "=" + f[k]
	}
	return strings.Join(parts, ";")
}

// find describes the checkout in dir.
func find(dir string) (checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return checkout{}, err
	}
	if strings.ContainsAny(abs, ";='\"") {
		return checkout{}, fmt.Errorf("%s: a checkout's path may not hold ; = or quotes", abs)
	}
	c := checkout{dir: abs}
	if top, err := git(abs, "rev-parse", "--show-toplevel"); err != nil || !samePath(top, abs) {
		// Not a git checkout of its own (a directory inside another
		// repository is not): a module version in the path, or nothing.
		c.base = moduleVersionBase(abs)
		if c.base != "" {
			c.from = "module-version"
		}
		return c, nil
	}
	if c.describe, err = git(abs, "describe", "--tags", "--always", "--dirty"); err != nil {
		return c, err
	}
	full, err := git(abs, "rev-parse", "HEAD")
	if err != nil {
		return c, err
	}
	c.commit = full[:12]
	secs, err := git(abs, "show", "-s", "--format=%ct", "HEAD")
	if err != nil {
		return c, err
	}
	unix, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return c, fmt.Errorf("commit time %q: %w", secs, err)
	}
	c.time = time.Unix(unix, 0).UTC().Format("20060102150405")
	c.base, c.exact, err = nearestRelease(abs)
	if err != nil {
		return c, err
	}
	if c.base != "" {
		c.from = "git-tags"
	}
	return c, nil
}

// nearestRelease returns the release tag the checkout's HEAD descends from
// (see the package comment) and whether HEAD is that tag's commit with a
// clean tree; "" when no release tag is in its past.
func nearestRelease(dir string) (string, bool, error) {
	out, err := git(dir, "tag", "--list", "v*")
	if err != nil {
		return "", false, err
	}
	var tags []string
	for _, t := range strings.Fields(out) {
		if semver.IsValid(t) && semver.Canonical(t) == t && semver.Prerelease(t) == "" {
			tags = append(tags, t)
		}
	}
	semver.Sort(tags)
	at, err := git(dir, "tag", "--points-at", "HEAD")
	if err != nil {
		return "", false, err
	}
	for i := len(tags) - 1; i >= 0; i-- {
		if !containsLine(at, tags[i]) {
			continue
		}
		status, err := git(dir, "status", "--porcelain", "--untracked-files=no")
		if err != nil {
			return "", false, err
		}
		return tags[i], status == "", nil
	}
	best, bestDistance := "", -1
	for _, t := range tags {
		// A release whose tag HEAD is an ancestor of came after it.
		if isAncestor(dir, "HEAD", t) {
			continue
		}
		base, err := git(dir, "merge-base", t, "HEAD")
		if err != nil {
			continue // no common history
		}
		n, err := git(dir, "rev-list", "--count", base+"..HEAD")
		if err != nil {
			return "", false, err
		}
		d, err := strconv.Atoi(n)
		if err != nil {
			return "", false, fmt.Errorf("rev-list --count: %q", n)
		}
		// Ties go to the newer release: tags are in semver order.
		if bestDistance < 0 || d <= bestDistance {
			best, bestDistance = t, d
		}
	}
	return best, false, nil
}

// moduleVersionRe finds a module version in a module cache path:
// .../trainer/v2@v2.3.0 or .../kueue@v0.19.1.
var moduleVersionRe = regexp.MustCompile(`@(v[^/]+)`)

// moduleVersionBase returns the release a module version in dir's path is
// or follows ("" when the path has none): the version itself for a
// release, the release a pseudo-version follows.
func moduleVersionBase(dir string) string {
	m := moduleVersionRe.FindAllStringSubmatch(filepath.ToSlash(dir), -1)
	if len(m) == 0 {
		return ""
	}
	v := m[len(m)-1][1]
	if module.IsPseudoVersion(v) {
		base, err := module.PseudoVersionBase(v)
		if err != nil {
			return ""
		}
		v = base
	}
	if !semver.IsValid(v) || semver.Prerelease(v) != "" {
		return ""
	}
	return semver.Canonical(v)
}

// samePath reports whether a and b name one directory.
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

func containsLine(s, line string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

func isAncestor(dir, a, b string) bool {
	_, err := git(dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

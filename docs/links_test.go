// Package docs_test checks the links of the project's Markdown pages.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pages are the Markdown pages whose links are checked, from the
// repository's root.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	for _, glob := range []string{"docs/*.md", "docs/commands/*.md", "hack/*/README.md", "fakegpu/*.md"} {
		m, err := filepath.Glob(filepath.Join("..", glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			out = append(out, strings.TrimPrefix(p, "../"))
		}
	}
	return out
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
	code    = regexp.MustCompile("`[^`\n]*`")
	scheme  = regexp.MustCompile(`^[a-z]+:`)
	strip   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// anchors are the anchors GitHub gives a page's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		a := strings.ReplaceAll(strip.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true // GitHub's anchor of a repeated heading
		}
		seen[a]++
		out[a] = true
	}
	return out
}

// TestLinks: every relative link of the pages names a file or folder that
// exists, and every #anchor a heading of the page it points into.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		data, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		text := code.ReplaceAllString(fence.ReplaceAllString(string(data), ""), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := filepath.Join("..", page)
			if path != "" {
				file = filepath.Join("..", filepath.Dir(page), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %s: no such file or folder", page, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			linked, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if !anchors(string(linked))[frag] {
				t.Errorf("%s: link %s: no heading of %s has the anchor #%s", page, target, strings.TrimPrefix(file, "../"), frag)
			}
		}
	}
}

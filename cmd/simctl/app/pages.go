package app

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// PagesDir is where the command pages are, from the repository's root.
const PagesDir = "docs/commands"

// Pages renders one Markdown page per simctl command, by file name
// (simctl.md, simctl-run.md, ...): its help exactly as `simctl CMD --help`
// prints it, and links to the command above it and those below. They are
// generated once, into PagesDir; TestCommandPages keeps them in step with
// the code and `make update` rewrites them.
func Pages() map[string][]byte {
	var help bytes.Buffer
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &help, Err: io.Discard})
	// The commands Execute adds, so that the root's help lists them as
	// `simctl --help` does; cobra's completion has no page.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	documented := func(c *cobra.Command) bool { return c.IsAvailableCommand() && c.Name() != "completion" }
	pages := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		help.Reset()
		c.InitDefaultHelpFlag() // as Execute does
		// Help writes what --help prints; it never fails for a command of
		// this tree.
		_ = c.Help()
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
		fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(c.Short, "."))
		fmt.Fprintf(&b, "<!-- Generated from simctl's command tree (cmd/simctl/app); `make update` rewrites it. -->\n\n")
		fmt.Fprintf(&b, "```\n%s```\n", help.String())
		var links []string
		if p := c.Parent(); p != nil {
			links = append(links, fmt.Sprintf("- [%s](%s): %s", p.CommandPath(), pageName(p), p.Short))
		}
		for _, sub := range c.Commands() {
			if documented(sub) {
				links = append(links, fmt.Sprintf("- [%s](%s): %s", sub.CommandPath(), pageName(sub), sub.Short))
			}
		}
		if len(links) > 0 {
			fmt.Fprintf(&b, "\n## See also\n\n%s\n", strings.Join(links, "\n"))
		}
		pages[pageName(c)] = []byte(b.String())
		for _, sub := range c.Commands() {
			if documented(sub) {
				walk(sub)
			}
		}
	}
	walk(root)
	return pages
}

// pageName is the file name of c's page: its command path, dashed.
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".md"
}

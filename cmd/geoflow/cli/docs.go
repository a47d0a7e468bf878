package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/geoflow/geoflow/internal/redact"
)

// newDocsCmd writes the command reference, generated from the command tree itself: one
// Markdown page per command and one man page per command. It is hidden: `make docs`
// runs it, and a test checks the committed pages against the tree, so they never drift
// from the flags.
func newDocsCmd() *cobra.Command {
	var md, man string
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Write the command reference (Markdown and man pages) generated from the commands' own flags",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeDocs(cmd.OutOrStdout(), md, man)
		},
	}
	cmd.Flags().StringVar(&md, "markdown", "docs/cli", "directory for the Markdown pages")
	cmd.Flags().StringVar(&man, "man", "docs/man", "directory for the man pages (section 1)")
	return cmd
}

// docsTree is the command tree as the reference shows it: without the hidden commands,
// and without the generation date, so that the pages only change when a command does.
func docsTree() *cobra.Command {
	root := newRoot(io.Discard, io.Discard, &redact.Set{})
	var noTag func(*cobra.Command)
	noTag = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noTag(sub)
		}
	}
	noTag(root)
	return root
}

// manDate is the date the man pages carry.
var manDate = time.Date(2026, time.November, 27, 0, 0, 0, 0, time.UTC)

// writeDocs replaces the pages in md and man with those of the current tree, and says so
// on out.
func writeDocs(out io.Writer, md, man string) error {
	for _, dir := range []string{md, man} {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	root := docsTree()
	if err := doc.GenMarkdownTree(root, md); err != nil {
		return fmt.Errorf("writing the Markdown pages to %s: %w", md, err)
	}
	// A fixed date: cobra would write today's, and the pages would change every month
	// without a command changing.
	date := manDate
	hdr := &doc.GenManHeader{Title: "GEOFLOW", Section: "1", Source: "geoflow", Manual: "geoflow manual", Date: &date}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		return fmt.Errorf("writing the man pages to %s: %w", man, err)
	}
	n, _ := filepath.Glob(filepath.Join(md, "*.md"))
	fmt.Fprintf(out, "%d commands documented in %s and %s\n", len(n), md, man)
	return nil
}

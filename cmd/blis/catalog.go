package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"blis/catalog"
)

func newCatalogCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{Use: "catalog", Short: "List the embedded models and chips"}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the embedded models and chips",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, "Models:")
			for _, m := range catalog.Models() {
				fmt.Fprintf(stdout, "  %-52s %s\n", m.ID, joinAliases(m.Aliases))
			}
			fmt.Fprintln(stdout, "Chips:")
			for _, ch := range catalog.Chips() {
				fmt.Fprintf(stdout, "  %-52s %s\n", ch.Name, joinAliases(ch.Aliases))
			}
		},
	})
	return c
}

func joinAliases(a []string) string {
	if len(a) == 0 {
		return ""
	}
	s := "aliases: " + a[0]
	for _, x := range a[1:] {
		s += ", " + x
	}
	return s
}

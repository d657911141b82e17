package render

import (
	"testing"

	"blis/internal/buildinfo"
	"blis/validate/page"
)

// The page prints the build's stamp; without one, the version alone.
func TestPageNamesTheBuild(t *testing.T) {
	rev := "9e3c509c8788fe0743605a8f06e0bf5c1c39ac1f"
	pg := &page.Page{BLISVersion: "v1"}
	if got := binaryText(pg); got != "`blis v1`" {
		t.Errorf("unstamped page: %q", got)
	}
	pg.Stamp = &buildinfo.Stamp{Version: "(devel)", Stamped: true, Revision: rev, BinarySHA256: "ab"}
	if got := binaryText(pg); got != "`blis v1` ((devel)+"+rev+", binary sha256 ab)" {
		t.Errorf("stamped page: %q", got)
	}
}

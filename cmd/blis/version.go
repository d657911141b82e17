package main

import (
	"runtime/debug"
)

// buildVersion names the BLIS build: the module version and the VCS
// revision Go stamped into the binary ("+dirty" when built from a modified
// tree), as validation pages cite it.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += "+" + rev
		if dirty {
			v += "+dirty"
		}
	}
	return v
}

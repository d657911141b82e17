package validate

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// The build stamp: a page names the BLIS build that computed it, so a
// reader can tell which code the numbers describe. `go build` stamps the
// VCS revision (and whether the tree was modified) into the binary; `go
// run` and `go test` do not, and the page says so rather than guess. The
// stamp depends only on the binary, so the same binary writes the same
// page; the regression gate compares numbers only, never the stamp.

// BuildStamp names a BLIS build.
type BuildStamp struct {
	// Version is the module version Go recorded ("(devel)" for a build of
	// a checkout).
	Version   string `json:"version"`
	GoVersion string `json:"go_version,omitempty"`
	// Stamped is true when the binary carries its VCS revision.
	Stamped  bool   `json:"stamped"`
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// BinarySHA256 digests the running executable ("" when unreadable).
	BinarySHA256 string `json:"binary_sha256,omitempty"`
}

// StampFromBuildInfo reads a stamp from Go's build information (ok false:
// none was embedded).
func StampFromBuildInfo(info *debug.BuildInfo, ok bool) BuildStamp {
	if !ok || info == nil {
		return BuildStamp{Version: "(unknown)"}
	}
	st := BuildStamp{Version: info.Main.Version, GoVersion: info.GoVersion}
	if st.Version == "" {
		st.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			st.Revision = s.Value
		case "vcs.modified":
			st.Modified = s.Value == "true"
		}
	}
	st.Stamped = st.Revision != ""
	return st
}

// CurrentBuild is the running binary's stamp, with the SHA-256 of its
// executable.
func CurrentBuild() BuildStamp {
	st := StampFromBuildInfo(debug.ReadBuildInfo())
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				st.BinarySHA256 = hex.EncodeToString(h.Sum(nil))
			}
			f.Close()
		}
	}
	return st
}

// Text is the stamp as the page prints it: the version and revision as
// the seed pages write them ("(devel)+9e3c509c…", "+dirty" for a modified
// tree), or "unstamped (go run)" when the binary carries no revision; then
// the executable's digest.
func (b BuildStamp) Text() string {
	var s strings.Builder
	if b.Stamped {
		s.WriteString(b.Version + "+" + b.Revision)
		if b.Modified {
			s.WriteString("+dirty")
		}
	} else {
		s.WriteString(b.Version + ", unstamped (go run): no VCS revision in the binary")
	}
	if b.GoVersion != "" {
		s.WriteString(", " + b.GoVersion)
	}
	if b.BinarySHA256 != "" {
		s.WriteString(", binary sha256 " + b.BinarySHA256)
	}
	return s.String()
}

// Short is the revision's first 8 hex digits ("unstamped" without one).
func (b BuildStamp) Short() string {
	if !b.Stamped {
		return "unstamped"
	}
	r := b.Revision
	if len(r) > 8 {
		r = r[:8]
	}
	if b.Modified {
		r += "+dirty"
	}
	return r
}

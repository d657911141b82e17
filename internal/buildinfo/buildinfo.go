// Package buildinfo names the BLIS build that produced an output, so a
// result file, an export or a validation page says which code computed it.
//
// A build is identified, in order of preference, by the VCS revision set at
// link time (go build -ldflags "-X blis/internal/buildinfo.revision=$(git
// rev-parse HEAD)"), by the revision `go build` stamps itself (not under `go
// run`, `go test` or GOFLAGS=-buildvcs=false, common in CI and containers),
// and otherwise by the SHA-256 of the executable: the same binary always
// gives the same stamp, so a page it writes is reproducible.
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// Set with -ldflags "-X blis/internal/buildinfo.revision=<commit>" and,
// for a build of a modified tree, "-X blis/internal/buildinfo.modified=true".
var revision, modified string

// Stamp names a BLIS build.
type Stamp struct {
	// Version is the module version Go recorded ("(devel)" for a build of
	// a checkout).
	Version   string `json:"version"`
	GoVersion string `json:"go_version,omitempty"`
	// Stamped is true when the build carries its VCS revision.
	Stamped  bool   `json:"stamped"`
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// BinarySHA256 digests the running executable ("" when unreadable).
	BinarySHA256 string `json:"binary_sha256,omitempty"`
}

// FromBuildInfo reads a stamp from Go's build information (ok false: none
// was embedded); a revision set at link time wins over Go's own.
func FromBuildInfo(info *debug.BuildInfo, ok bool) Stamp {
	st := Stamp{Version: "(unknown)"}
	if ok && info != nil {
		st = Stamp{Version: info.Main.Version, GoVersion: info.GoVersion}
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
	}
	if r := strings.TrimSpace(revision); r != "" {
		st.Revision, st.Modified = r, modified == "true"
	}
	st.Stamped = st.Revision != ""
	return st
}

// Current is the running binary's stamp, with the SHA-256 of its
// executable.
func Current() Stamp {
	st := FromBuildInfo(debug.ReadBuildInfo())
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

// VersionString is the version and revision as results and exports cite
// them: "(devel)+9e3c509c…" ("+dirty" for a modified tree), or the version
// alone when the build carries no revision.
func (b Stamp) VersionString() string {
	if !b.Stamped {
		return b.Version
	}
	v := b.Version + "+" + b.Revision
	if b.Modified {
		v += "+dirty"
	}
	return v
}

// Text is the stamp as a page prints it: the version and revision, or,
// without a revision, the version with what identifies the build instead;
// then the Go version and the executable's digest.
func (b Stamp) Text() string {
	var s strings.Builder
	s.WriteString(b.VersionString())
	if !b.Stamped {
		s.WriteString(", no VCS revision (go run, or GOFLAGS=-buildvcs=false): identified by its binary digest")
	}
	if b.GoVersion != "" {
		s.WriteString(", " + b.GoVersion)
	}
	if b.BinarySHA256 != "" {
		s.WriteString(", binary sha256 " + b.BinarySHA256)
	}
	return s.String()
}

// Short is the revision's first 8 hex digits, or without one the binary
// digest's ("sha256:" and 12 digits), or "unstamped" when neither is known.
func (b Stamp) Short() string {
	if !b.Stamped {
		if len(b.BinarySHA256) >= 12 {
			return "sha256:" + b.BinarySHA256[:12]
		}
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

package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestStamp(t *testing.T) {
	rev := "9e3c509c8788fe0743605a8f06e0bf5c1c39ac1f"
	sha := "cd34ef56ab78cd90ef12ab34"
	info := func(settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "blis", Version: "(devel)"}, Settings: settings}
	}
	for _, c := range []struct {
		name           string
		info           *debug.BuildInfo
		ok             bool
		ldRev, ldDirty string
		sha            string
		version, text  string
		short          string
		stamped        bool
	}{
		{"go build", info(debug.BuildSetting{Key: "vcs.revision", Value: rev}, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), true, "", "", "ab12",
			"(devel)+" + rev, "(devel)+" + rev + ", go1.26.0, binary sha256 ab12", "9e3c509c", true},
		{"modified tree", info(debug.BuildSetting{Key: "vcs.revision", Value: rev}, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), true, "", "", "",
			"(devel)+" + rev + "+dirty", "(devel)+" + rev + "+dirty, go1.26.0", "9e3c509c+dirty", true},
		{"go run: the binary digest identifies it", info(), true, "", "", sha,
			"(devel)", "(devel), no VCS revision (go run, or GOFLAGS=-buildvcs=false): identified by its binary digest, go1.26.0, binary sha256 " + sha, "sha256:cd34ef56ab78", false},
		{"-buildvcs=false with -ldflags revision", info(), true, "abcdef0123456789", "true", sha,
			"(devel)+abcdef0123456789+dirty", "(devel)+abcdef0123456789+dirty, go1.26.0, binary sha256 " + sha, "abcdef01+dirty", true},
		{"link-time revision wins", info(debug.BuildSetting{Key: "vcs.revision", Value: rev}), true, "abcdef0123456789", "", "",
			"(devel)+abcdef0123456789", "(devel)+abcdef0123456789, go1.26.0", "abcdef01", true},
		{"nothing known", nil, false, "", "", "", "(unknown)", "(unknown), no VCS revision (go run, or GOFLAGS=-buildvcs=false): identified by its binary digest", "unstamped", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			revision, modified = c.ldRev, c.ldDirty
			defer func() { revision, modified = "", "" }()
			st := FromBuildInfo(c.info, c.ok)
			st.BinarySHA256 = c.sha
			if st.Stamped != c.stamped || st.VersionString() != c.version || st.Text() != c.text || st.Short() != c.short {
				t.Errorf("stamp %+v:\n version %q\n text %q\n short %q\nwant\n version %q\n text %q\n short %q",
					st, st.VersionString(), st.Text(), st.Short(), c.version, c.text, c.short)
			}
		})
	}
	// The running binary: the same stamp each time (a page is
	// deterministic for one binary).
	if a, b := Current(), Current(); a != b || a.BinarySHA256 == "" {
		t.Errorf("Current: %+v then %+v", a, b)
	}
}

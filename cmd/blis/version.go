package main

import "blis/internal/buildinfo"

// buildVersion names the BLIS build as results and exports cite it: the
// module version and the VCS revision when the build carries one
// (internal/buildinfo says how to stamp one under -buildvcs=false).
func buildVersion() string { return buildinfo.Current().VersionString() }

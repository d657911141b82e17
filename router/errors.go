package router

import "blis/internal/inputerr"

// ErrBadInput marks every error this package returns for input a user can
// fix (a bad config file, an unknown router name): the same mark as the
// scenario's and the workload's, so the CLI exits 2 on it.
var ErrBadInput = inputerr.ErrBadInput

// ConfigError says where in which file which key had which bad value, and
// what is allowed.
type ConfigError = inputerr.Error

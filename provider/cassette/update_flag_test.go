package cassette

import "flag"

// -update is accepted so that `go test ./... -update` runs in every package,
// as the golden-file tests of other packages need; this package has none.
var _ = flag.Bool("update", false, "rewrite golden files (this package has none)")

package prismtest_test

import (
	"os"
	"os/exec"
	"testing"
)

// TestOutsideModule runs the tests of testdata/greetmod: a separate module
// (its go.mod replaces prism with this repository) that defines its own
// tool and tests its cards and a scripted run with prismtest only — proof
// that a tool author's module can use prismtest through prism's public API.
func TestOutsideModule(t *testing.T) {
	args := []string{"test", "-count=1"}
	if raceEnabled { // share the build cache of the race-enabled run
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(t.Context(), "go", append(args, "./...")...)
	cmd.Dir = "testdata/greetmod"
	// The module's own go.mod and go.sum decide; a workspace or -mod flag
	// of the caller's must not.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}

package main

import (
	"context"
	"fmt"
	"io"
)

// runExec runs one tool call and prints every projection.
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

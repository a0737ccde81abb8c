package main

import (
	"context"
	"fmt"
	"io"
)

// runImport imports session logs into the store.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

// runExport writes one session as JSONL.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

// runWatch tails a dsh sessions directory into the store.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

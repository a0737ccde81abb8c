// Package greet says hello to sailors.
package greet

import "fmt"

// Hello returns a greeting for name; an empty name greets a sailor.
func Hello(name string) string {
	if name == "" {
		name = "sailor"
	}
	// TODO: localize the greeting.
	return fmt.Sprintf("Hello, %s!", name)
}

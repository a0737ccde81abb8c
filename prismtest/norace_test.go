//go:build !race

package prismtest_test

const raceEnabled = false

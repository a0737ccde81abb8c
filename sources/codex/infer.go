package codex

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"prism/core"
)

// Kinds of an inferred error.
const (
	// InferExitCode: the output reports a non-zero exit code. The call
	// completed (prism's rule for a command: a non-zero exit is a completed
	// call with its exit pill), so the result is not flagged isError.
	InferExitCode = "exit-code"
	// InferExplicit: the output says the call failed (a known error text,
	// or an older rollout's {success: false}); the result is flagged
	// isError.
	InferExplicit = "explicit"
	// InferTurnAborted: the turn was aborted (turn_aborted) before the call
	// was answered; the synthetic result is flagged isError.
	InferTurnAborted = "turn-aborted"
	// InferUnanswered: the turn ended (task_complete, or the next
	// task_started) without the call's output; the synthetic result is
	// flagged isError with TOOL_OUTCOME_UNKNOWN.
	InferUnanswered = "unanswered"
)

// InferredError is why a Codex call's result is taken for a failure. Codex
// persists no error flag, so this is a reading of the output; it is
// recorded in the tool/result's meta as {"inferredError": …}.
type InferredError struct {
	Kind string `json:"kind"`
	// ExitCode is the reported exit code (kind exit-code).
	ExitCode *int `json:"exitCode,omitempty"`
	// Text is the output's first line (kind explicit).
	Text string `json:"text,omitempty"`
}

// IsError reports whether the result is flagged isError: every kind but a
// non-zero exit code.
func (e *InferredError) IsError() bool { return e.Kind != InferExitCode }

// meta is the result meta recording e.
func (e *InferredError) meta() json.RawMessage {
	b, _ := core.MarshalNoEscape(struct {
		InferredError *InferredError `json:"inferredError"`
	}{e})
	return b
}

// InferredErrorOf returns the inferred error recorded in a result's meta,
// or nil.
func InferredErrorOf(meta json.RawMessage) *InferredError {
	var m struct {
		InferredError *InferredError `json:"inferredError"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || m.InferredError == nil || m.InferredError.Kind == "" {
		return nil
	}
	return m.InferredError
}

// errorPrefixes are output texts with which Codex reports a failed call
// (argument parsing, an unknown call, patch verification, a refused or
// failed execution).
var errorPrefixes = []string{
	"failed to parse function arguments",
	"unsupported call",
	"unsupported custom tool call",
	"apply_patch verification failed",
	"execution error",
	"exec command rejected",
	"aborted by user",
	"patch rejected",
	"error:",
	"Error:",
}

// Infer reads a call's output text for a failure: explicit (the output
// object said success false) first, then a reported exit code, then a known
// error text. It returns nil for an output that looks like a success.
func Infer(text string, explicit bool) *InferredError {
	if explicit {
		return &InferredError{Kind: InferExplicit, Text: firstLine(text)}
	}
	if _, code, ok := ParseExecOutput(text); ok {
		if code != 0 {
			return &InferredError{Kind: InferExitCode, ExitCode: &code}
		}
		return nil
	}
	t := strings.TrimSpace(text)
	for _, p := range errorPrefixes {
		if strings.HasPrefix(t, p) {
			return &InferredError{Kind: InferExplicit, Text: firstLine(t)}
		}
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 200
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

var (
	exitCodeLine  = regexp.MustCompile(`^Exit code: (-?\d+)$`)
	processExited = regexp.MustCompile(`^Process exited with code (-?\d+)$`)
)

// ParseExecOutput reads the output of a Codex command (shell,
// shell_command, exec_command, local_shell) in the three forms Codex has
// written: the older JSON {"output": …, "metadata": {"exit_code": n}}; the
// text "Exit code: n\nWall time: …\nOutput:\n…"; and unified exec's header
// lines, one of them "Process exited with code n", then "Output:\n…". It
// returns the command's output and exit code; ok is false when text is
// none of these (or the command is still running, with no exit code).
func ParseExecOutput(text string) (body string, exitCode int, ok bool) {
	if strings.HasPrefix(text, "{") {
		var j struct {
			Output   *string `json:"output"`
			Metadata *struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(text), &j) == nil && j.Output != nil && j.Metadata != nil && j.Metadata.ExitCode != nil {
			return *j.Output, *j.Metadata.ExitCode, true
		}
		return "", 0, false
	}
	found := false
	rest := text
	for range 8 { // the header is a few lines
		line, after, more := strings.Cut(rest, "\n")
		if line == "Output:" {
			if !found {
				return "", 0, false
			}
			return after, exitCode, true
		}
		for _, re := range []*regexp.Regexp{exitCodeLine, processExited} {
			if m := re.FindStringSubmatch(line); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil {
					exitCode, found = n, true
				}
			}
		}
		if !more {
			break
		}
		rest = after
	}
	if found {
		return text, exitCode, true
	}
	return "", 0, false
}

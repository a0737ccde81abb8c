// Package codex reads OpenAI Codex CLI rollouts (the
// ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl files) into prism sessions:
// a core.SessionHeader and a log of core.Events in dsh's vocabulary, so a
// Codex session is shown, replayed and searched with prism's own cards.
//
// It is pure: Decode reads lines from an io.Reader and touches nothing else.
// The mapping, line by line:
//
//   - session_meta → the header (id, createdAt, cwd) and Rollout's lineage
//     fields; a repeated session_meta (a fork's inherited prefix) is kept
//     as a source/raw event for now.
//   - turn_context → request/context {provider, model}, opening a turn in
//     rollouts without turn markers.
//   - event_msg task_started → turn/start; task_complete → turn/end
//     {completed}, or {error} with its error message; turn_aborted →
//     turn/end {aborted}, each unanswered call getting an aborted result.
//   - event_msg token_count → the usage of the step's assistant/message (its
//     last_token_usage, summed when a step has several); one with a null
//     info, or outside any step, is kept as a source/raw event.
//   - event_msg user_message, agent_message and agent_reasoning mirror
//     response items and map to nothing.
//   - response_item message → user/message (a user's prompt; scaffolding
//     such as <environment_context>, <user_instructions> and developer or
//     system messages becomes a plugin-sourced context message, never the
//     title) or the text of the step's assistant/message.
//   - response_item reasoning → reasoning blocks of the step's
//     assistant/message (its summary and reasoning text; the encrypted
//     content is not kept).
//   - response_item function_call, custom_tool_call and local_shell_call →
//     a tool-call block and a tool/call; function_call.arguments is kept
//     byte for byte, a custom tool's free-text input as is, a local shell
//     call's action as its JSON. function_call_output and
//     custom_tool_call_output → the tool/result of the call with the same
//     call_id.
//   - anything else → a log-only source/raw event {source, line, record},
//     marked ignorable.
//
// Steps are prism's: Codex has none. A step is one model response — the
// reasoning, messages and calls that follow a user message, a turn start or
// the outputs of the previous response — plus the outputs that answer its
// calls. A step is emitted whole when it closes (the next response, a turn
// end, or the end of the input), so its assistant/message carries its
// usage; at the end of the input an open step and turn stay open, its
// unanswered calls pending.
//
// Codex stores no error flag on a call's output. An error is inferred (see
// InferredError) and recorded in the result's meta as inferredError.
package codex

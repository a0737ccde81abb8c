// Package core is prism's domain: what a tool is, how one call runs, what it
// returns to the model and shows to a person, and the session log that
// records it all. It imports nothing else of prism's and no web, template or
// database library; storage, transport and pages are adapters around it.
//
// # Tools
//
// A tool is defined once and compiled into a [*Tool]:
//
//   - [Define] (or [MustDefine]) takes a typed [Definition]: A is the
//     argument type, decoded from the model's JSON after it validated
//     against Parameters (dsh's parameter DSL, see package
//     prism/core/jsonschema); V is the canonical value, validated against
//     [Output].Schema. Execute returns only the value; Output.Render makes
//     the model's [Content] of it and Output.PresentationMeta what cards
//     need (persisted in the tool/result event).
//   - [DefineRaw] (or [MustDefineRaw]) takes a [RawDefinition]: a JSON
//     Schema the model sees as is and arguments passed as any JSON value
//     (the way MCP tools are registered).
//
// PresentCall and PresentResult make a call's views (below) from the logged
// arguments and the durable [ToolResult] only, so a card looks the same
// live and on replay.
//
// # The registry and one call
//
// A [Registry] holds the tools and the hooks around them. [Registry.Execute]
// runs one [Call] through the pipeline: the lossless argument snapshot,
// pre-execute hooks ([Registry.UsePreExecute]: [Allow], [Deny], [Ask], the
// last answered by the [Approver]), guards ([Registry.AddGuard]), argument
// validation, the body (wrapped by [Registry.UseExecute]), output
// validation, Render, PresentationMeta, post-execute hooks
// ([Registry.UsePostExecute]: [Accept], [ReplaceContent], [ReplaceValue],
// [Block]) and the result observers ([Registry.OnResult]). The agent loop
// runs the same pipeline in steps: [Registry.Prepare] returns a [Pending]
// call, whose [Pending.Dispatch] runs the body and [Pending.Complete] the
// rest.
//
// The outcome is a [Result]: a [*Success] (with the value) or a [*Failure]
// (with a [ToolFailure]); [Result.Projection] is the durable [ToolResult]
// (content, isError, meta) that the log keeps. Errors that cross the API
// carry dsh's codes ([Coded], [ErrorCode], the Code* constants).
//
// # Views
//
// A [CallView] presents a pending call and a [ResultView] its result: the
// card kinds ([GenericCallView], [TerminalCallView], [DiffCallView],
// [ReadResultView], [SearchMatchesView], [WebFetchView], [ImageResultView],
// …), each a pure projection that package prism/views renders.
// [Registry.PresentCall] and [Registry.PresentResult] fall back to the
// generic card for a tool without presenters or with a failing one;
// [DecodeCallView] and [DecodeResultView] read a view's JSON back.
//
// # Sessions and events
//
// A session is an append-only log of [Event]s (the Event* types: turns,
// steps, messages, tool/call, tool/result, approvals; the typed data of
// each in eventdata.go) under a [SessionHeader]. A [Session] ([NewSession],
// [OpenSession] for a stored log) assigns contiguous seqs, checks each
// event's data is lossless JSON and the message-surface rules hold, and
// commits to its [EventStore] at durability points ([Session.Sync],
// [Session.WaitDurable]) or within [DefaultFlushDelay]. Without a store it
// keeps the log in memory.
//
// Reading a log back: [ValidateLog] and [CheckRelations] say whether it is
// well formed, [InterruptedTurnClosers] repairs a crashed turn,
// [DeriveMessages] is what the model sees next, [HumanTranscript] what a
// person saw, and [Summarize] the session's [Summary] (title, status,
// counters, tokens) that the session list and the page header both show.
package core

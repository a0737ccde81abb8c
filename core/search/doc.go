// Package search is prism's full-text search, independent of any database:
// the tokenizer that index and queries share (EachToken, Normalize), the
// query language and its parser (Parse, Query), what each event contributes
// to the index (Extract, Doc), and the highlighted snippet of a hit
// (MakeSnippet).
//
// A store indexes the Terms of a Doc's fields and turns a Query into its
// own SQL: package db does it for SQLite's FTS4, whose "simple" tokenizer
// leaves the terms EachToken produces intact (they hold only lower-case
// ASCII letters and digits and non-ASCII characters, separated by spaces);
// a PostgreSQL store can build its tsvector from the same terms.
//
// The query language, as the search page explains it:
//
//	word            documents holding the word (every word must match)
//	"two words"     the words in this order, next to each other
//	conf*           words that start with conf (at least 2 characters)
//	-word, -"a b"   leave out documents holding it (also -tool:bash …)
//	a OR b          either (OR in capitals, between two terms)
//	tool:grep       calls of a tool (tool:mcp__* for a prefix)
//	error:          failed calls and turns; error:TOOL_TIMEOUT by code
//	status:running  sessions by status: running, idle, ended, interrupted
//	session:ID      one session (an id or its first characters)
//	kind:call       user, context, assistant, call, title, session, event
//	label:wrong     what a person labelled so (a call's card; a session's label: all of it)
//	has:comment     what has a label with a note (has:label: any label)
//	after:2026-11-01  on or after a day (UTC), a time (RFC 3339) or a span
//	before:2026-11-08 before a day or time; after:7d = the last 7 days
//
// Code identifiers and paths are sequences of words, so greet_test.go and
// fmt.Sprintf are found as typed, and Sprintf alone finds fmt.Sprintf.
package search

// Package logkey names the keys of prism's structured logs (log/slog), so
// one fact is logged under one key everywhere — a session is always
// session_id — and a log query written once finds every line about it.
// TestLogKeysAreConstants holds that no log call spells a key itself.
package logkey

// Identities.
const (
	SessionID = "session_id" // one session
	CallID    = "call_id"    // one tool call
	ShareID   = "share_id"   // one share link (never its token)
	NoteID    = "note_id"    // one note beside a session's log
	NoteKind  = "note_kind"  // a note's kind (label, link, …)
	SourceID  = "source_id"  // the session a fork was cut from
	Tool      = "tool"       // a tool's name
	Seq       = "seq"        // an event's seq
	After     = "after"      // a seq a read resumes after
	Turn      = "turn"       // a turn number
	Step      = "step"       // a step number
	Type      = "type"       // an event type
	Approval  = "approval"   // an approval's id
	By        = "by"         // who decided an approval
	Policy    = "policy"     // a session's approval policy
)

// Outcomes and counts.
const (
	Err      = "err"      // the error
	Status   = "status"   // an HTTP status or a session status
	Outcome  = "outcome"  // what an import or a watch sync did
	Reason   = "reason"   // why a turn ended or a retry happened
	Code     = "code"     // an error code
	Message  = "message"  // a failure's message
	Panic    = "panic"    // a recovered panic's value
	Sessions = "sessions" // a number of sessions
	Events   = "events"   // a number of events
	Progress = "progress" // how far a long job has got, e.g. "120 of 300"
	Added    = "added"    // events stored by an import or sync
	Repaired = "repaired" // crash-repair events appended
	// Subagents is a number of subagent sessions; Shares a number of share
	// links (what a delete removed); Retain a retention period.
	Subagents = "subagents"
	Shares    = "shares"
	Retain    = "retain"
	Attempt   = "attempt" // a retry's number
	// RetryAfter is a provider's retry-after delay.
	RetryAfter = "retry_after"
	// Rule is an attention rule's name.
	Rule = "rule"
	// Rules is a number of attention rules.
	Rules = "rules"
)

// Places, requests and configuration.
const (
	Path         = "path"          // a file path
	File         = "file"          // an imported file
	Dir          = "dir"           // a directory
	Watch        = "watch"         // the watched dsh sessions directory
	DB           = "db"            // the database file
	Workspace    = "workspace"     // a session's workspace
	URL          = "url"           // a URL
	Method       = "method"        // an HTTP method
	Duration     = "dur"           // how long something took
	Provider     = "provider"      // a model provider
	Model        = "model"         // a model name
	DefaultModel = "default_model" // the model of new sessions
	BaseURL      = "base_url"      // a model endpoint
	APIKey       = "api_key"       // whether an API key is set (never the key)
	Bash         = "bash"          // whether the bash tool is enabled
	OwnerToken   = "owner_token"   // whether an owner token is set (never the token)
	AskRules     = "ask_rules"     // how many ask rules are configured
)

// MCP servers.
const (
	MCPServer = "mcp_server" // an MCP server's configured name
	MCPTool   = "mcp_tool"   // a tool's name as its MCP server spells it
	Tools     = "tools"      // a number of tools
	Target    = "target"     // an MCP server's command or URL
	Line      = "line"       // one line a child process wrote
)

// Several nodes on one PostgreSQL database.
const (
	Migration = "migration" // a schema migration's file name
	Node      = "node"      // a prism node's name
	Command   = "command"   // a forwarded command's kind (message, cancel)
	Role      = "role"      // what a dedicated database connection is for
)

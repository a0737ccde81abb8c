package store

import "context"

// Command is what one node of a cluster (several prism nodes sharing a
// PostgreSQL store) forwards to the node that runs a session.
type Command struct {
	SessionID string
	// Kind is CommandMessage, CommandCancel, CommandApproval or
	// CommandPolicy.
	Kind string
	// Body is the kind's argument: a message's text, a decision or a
	// policy (JSON as the caller chooses); empty for a cancel.
	Body string
}

// Command kinds.
const (
	CommandMessage  = "message"
	CommandCancel   = "cancel"
	CommandApproval = "approval"
	CommandPolicy   = "policy"
)

// CommandHandler acts on a forwarded command: handled reports whether this
// node runs the session; if it does, reply is what it returns to the
// forwarding node (also beside a refusal) and err its refusal (nil: taken).
type CommandHandler func(ctx context.Context, c Command) (reply string, handled bool, err error)

package views

// RulesPage is the /rules page: the attention rules in force (read-only),
// each one's last firing, the webhook's deliveries (its URL, never its
// secret) and, after a reload that failed, why (the old rules stay).
type RulesPage struct {
	// File is the rules file ("" when none was given).
	File string
	// LoadedAt is when the rules in force were read (epoch ms).
	LoadedAt int64
	// LoadError is the last reload's error ("" when it succeeded).
	LoadError string
	Rules     []RuleRow
	// WebhookURL is where webhook actions post ("" = no webhook).
	WebhookURL string
	Deliveries []DeliveryRow
	// Dropped counts deliveries a full queue dropped; Queued those waiting.
	Dropped int64
	Queued  int
}

// RuleRow is one rule on /rules.
type RuleRow struct {
	Name, When string
	// Detail is the rule's parameters as text: for 2m, tools bash, …
	Detail  string
	Actions []string
	Line    int
	// Fired counts its firings since the server started; the last one's
	// time (epoch ms, 0 = never), session and reason.
	Fired       int
	LastAt      int64
	LastSession string
	LastReason  string
}

// DeliveryRow is one webhook delivery on /rules.
type DeliveryRow struct {
	ID, Rule, Session string
	Attempts, Status  int
	OK                bool
	Error             string
	At                int64
}

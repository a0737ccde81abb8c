-- Follow-up messages, cancels, approval decisions and approval policies
-- for a session that another node runs.
-- The node that takes the request inserts a row and NOTIFYs
-- prism_commands with its id (in the same transaction); the node holding
-- the session's advisory lock acts on it, sets answered_at (and error when
-- it refused, "CODE:message"), reply (what it returns, JSON by kind, also
-- beside a refusal) and NOTIFYs prism_answers with the id. The asking node
-- deletes the row once it read the answer.
CREATE TABLE session_commands (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	kind        text NOT NULL CHECK (kind IN ('message', 'cancel', 'approval', 'policy')),
	body        text NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL DEFAULT now(),
	answered_at timestamptz,
	error       text,
	reply       text
);

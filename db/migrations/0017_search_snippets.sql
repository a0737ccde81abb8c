-- Each document's query-free snippet, kept when it is filed (db/search.go,
-- core/search.Plain as JSON): what a search of operators alone (tool:,
-- error:, kind:…) shows, so such a page is read without reading and
-- decoding each hit's events. A pending card keeps what its result will be
-- merged with; a complete document only the part its snippet shows. NULL
-- for a session's own document (its snippet is its current title and cwd)
-- and for a document filed before this migration: db.searchVersion 2
-- refiles every session's documents when the store opens.
ALTER TABLE search_docs ADD COLUMN snip TEXT;

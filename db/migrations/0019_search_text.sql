-- Each document's text: the sections its events contribute to the index
-- (core/search.Extract), kept when it is filed (db/searchtext.go says how
-- they are written), so a search with words makes its page's snippets
-- from them rather than reading and decoding each hit's events. secs are
-- the document's sections (a card's call's); result_secs a card's
-- result's, written when it is filed. No row for a session's own document
-- (its snippet is its current title and cwd) nor for a document without
-- text. The documents filed before this migration get theirs when
-- db.searchVersion 3 refiles every session's documents as the store opens;
-- a document without one (a card whose call was filed without text) has
-- its snippet made from its events, as before.
CREATE TABLE search_text (
	id          INTEGER PRIMARY KEY REFERENCES search_docs (id) ON DELETE CASCADE,
	secs        BLOB,
	result_secs BLOB
) STRICT;

-- Each card's number: its ordinal among its session's cards of the same
-- call id (a model may reuse one), 1 for the first; 0 for a document that
-- is not a card. It is counted when the card is filed (db/search.go's
-- insDocSQL: the cards of its call id filed before it, plus one — a
-- session's documents are filed in seq order), so a page of hits reads it
-- rather than counting each hit's cards. The documents filed before this
-- migration are counted here, as a search counted them until now.
ALTER TABLE search_docs ADD COLUMN card INTEGER NOT NULL DEFAULT 0;
UPDATE search_docs SET card = (SELECT count(*) FROM search_docs x
	WHERE x.session_id = search_docs.session_id AND x.call_id = search_docs.call_id AND x.call_id IS NOT NULL AND x.seq <= search_docs.seq)
WHERE call_id IS NOT NULL;

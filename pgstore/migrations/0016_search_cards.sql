-- Each card's number: its ordinal among its session's cards of the same
-- call id (a model may reuse one), 1 for the first; 0 for a document that
-- is not a card. It is counted when the card is filed (pgstore/search.go:
-- insertDocsSQL counts the cards of its call id filed before it and those
-- before it in its own transaction; pairResultSQL, filing a card of a
-- result alone, counts the later cards of its call id one more), so a page
-- of hits reads it rather than counting each hit's cards. The documents
-- filed before this migration are counted here, as a search counted them
-- until now.
ALTER TABLE search_docs ADD COLUMN card integer NOT NULL DEFAULT 0;
UPDATE search_docs d SET card = c.n
FROM (SELECT id, row_number() OVER (PARTITION BY session_id, call_id ORDER BY seq) AS n FROM search_docs WHERE call_id IS NOT NULL) c
WHERE d.id = c.id;

package core

// FactsSansTexts returns f without its texts, which only an appended value
// gives (FactsOf never does); the search package's tests hold the texts to
// a decode.
func FactsSansTexts(f EventFacts) EventFacts {
	f.texts = nil
	return f
}

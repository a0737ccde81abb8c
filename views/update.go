package views

// stepHead is the header row of a step, patched on its own when the step
// ends.
type stepHead struct{ Step *Step }

// ElemID implements Node.
func (h stepHead) ElemID() string { return h.Step.HeadID() }

// Node is anything with a stable element id that a patch can carry:
// segments, items and stepHead.
type Node interface {
	ElemID() string
}

// Append adds Node as the last child of the element Parent.
type Append struct {
	Parent string
	Node   Node
}

// Update says what applying events changed on the page: nodes appended to a
// container, nodes to morph in place (outer morph by id), and whether the
// session header changed. Nodes render their state at render time, so an
// Update may be rendered after later events were applied (coalescing).
type Update struct {
	// From and Seq are the first and last seq the update covers.
	From, Seq int64
	Appends   []Append
	Morphs    []Node
	Header    bool
}

// Empty reports whether the update changes nothing on the page.
func (u *Update) Empty() bool {
	return len(u.Appends) == 0 && len(u.Morphs) == 0 && !u.Header
}

// covered reports whether rendering the update's appends already renders n:
// n itself, or its step, is being appended.
func (u *Update) covered(n Node) bool {
	id := n.ElemID()
	for _, a := range u.Appends {
		if a.Node.ElemID() == id {
			return true
		}
		if s, ok := a.Node.(*Step); ok && stepOf(n) == s {
			return true
		}
	}
	return false
}

// stepOf returns the step a node lives in, when known.
func stepOf(n Node) *Step {
	switch x := n.(type) {
	case *Card:
		return x.Step
	case stepHead:
		return x.Step
	}
	return nil
}

func (u *Update) append(parent string, n Node) {
	for _, a := range u.Appends {
		if a.Node.ElemID() == n.ElemID() {
			return
		}
		if s, ok := a.Node.(*Step); ok && parent == s.ItemsID() {
			return // the step renders its items
		}
	}
	u.Appends = append(u.Appends, Append{Parent: parent, Node: n})
}

func (u *Update) morph(n Node) {
	if u.covered(n) {
		return
	}
	for _, m := range u.Morphs {
		if m.ElemID() == n.ElemID() {
			return
		}
	}
	u.Morphs = append(u.Morphs, n)
}

// Merge folds the later update v into u, so one patch group carries both.
func (u *Update) Merge(v Update) {
	if v.Seq > u.Seq {
		u.Seq = v.Seq
	}
	if v.From < u.From {
		u.From = v.From
	}
	for _, a := range v.Appends {
		u.append(a.Parent, a.Node)
	}
	for _, m := range v.Morphs {
		u.morph(m)
	}
	// Morphs of nodes now covered by an append are redundant.
	kept := u.Morphs[:0]
	for _, m := range u.Morphs {
		if !u.covered(m) {
			kept = append(kept, m)
		}
	}
	u.Morphs = kept
	u.Header = u.Header || v.Header
}

// Package views holds prism's templ components and the view models they
// render: the layout, the session list, the inspector page, the call page
// and one card component per card kind. Components take view models and
// never touch storage.
//
// Timeline is the single fold from session events to the page model. The
// full page, the live SSE patches (RenderUpdate) and the replay page all
// render from it with the same components, so a card patched live is byte
// for byte the card a reload shows.
//
// views imports core only (of prism's packages).
package views

//go:generate go tool templ generate -path ..

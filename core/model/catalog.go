package model

import (
	"log/slog"
	"slices"
	"strings"

	"prism/core"
)

// Demo is the scripted demo model: a Scripted player of DemoScript that
// also seeds the workspace its script expects.
type Demo struct {
	*Scripted
}

// SeedWorkspace prepares dir for the demo script (see SeedDemoWorkspace).
func (d *Demo) SeedWorkspace(dir string) error { return SeedDemoWorkspace(dir) }

// WorkspaceSeeder is implemented by models whose script needs a prepared
// workspace; the runner gives such a model a fresh seeded directory.
type WorkspaceSeeder interface {
	SeedWorkspace(dir string) error
}

// CatalogConfig configures a Catalog.
type CatalogConfig struct {
	// OpenAI is the connection every non-scripted model name uses; its Model
	// is the default model when an API key is set.
	OpenAI OpenAIConfig
	// Default overrides the default model name.
	Default string
	// DemoPacing is the scripted demo's pacing; nil means DemoPacing().
	DemoPacing *Pacing
	// Logger is passed to the clients.
	Logger *slog.Logger
}

// Catalog maps model names to models: "scripted" (alias "demo") is a fresh
// demo player; any other name is an OpenAI-compatible client for that wire
// model, which needs an API key. The default is the configured OpenAI model
// when a key is set, else "scripted". It is safe for concurrent use.
type Catalog struct {
	cfg CatalogConfig
}

// NewCatalog returns a catalog for cfg.
func NewCatalog(cfg CatalogConfig) *Catalog {
	if cfg.OpenAI.Model == "" {
		cfg.OpenAI.Model = DefaultModel
	}
	if cfg.OpenAI.Logger == nil {
		cfg.OpenAI.Logger = cfg.Logger
	}
	return &Catalog{cfg: cfg}
}

// Default returns the name New("") resolves to.
func (c *Catalog) Default() string {
	switch {
	case c.cfg.Default != "":
		return c.cfg.Default
	case c.cfg.OpenAI.APIKey != "":
		return c.cfg.OpenAI.Model
	}
	return DemoModelName
}

// Names lists the names worth offering: the default first, then the demo.
func (c *Catalog) Names() []string {
	out := []string{c.Default()}
	if c.cfg.OpenAI.APIKey != "" && !slices.Contains(out, c.cfg.OpenAI.Model) {
		out = append(out, c.cfg.OpenAI.Model)
	}
	if !slices.Contains(out, DemoModelName) {
		out = append(out, DemoModelName)
	}
	return out
}

// knownProviderModels are the provider models a keyless server still
// recognizes (to say they need a key rather than that they do not exist).
var knownProviderModels = []string{DefaultModel, "deepseek-reasoner"}

// New returns a model for name ("" = Default). Each call returns a fresh
// model, so a scripted player's position belongs to one session. Without
// an API key, a provider model this catalog knows (the configured one,
// DeepSeek's) fails with CodeUnavailable — it needs a key — and any other
// name with CodeInvalid, naming the models there are. With a key every
// name is passed to the provider, which judges it.
func (c *Catalog) New(name string) (Model, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = c.Default()
	}
	switch name {
	case DemoModelName, "demo":
		p := DemoPacing()
		if c.cfg.DemoPacing != nil {
			p = *c.cfg.DemoPacing
		}
		return NewDemo(p), nil
	}
	if c.cfg.OpenAI.APIKey == "" {
		if !slices.Contains(knownProviderModels, name) && name != c.cfg.OpenAI.Model && name != c.cfg.Default {
			return nil, core.Errorf(core.CodeInvalid,
				"unknown model %q: this server has no API key configured, so it offers only the scripted demo model %q", name, DemoModelName)
		}
		return nil, core.Errorf(core.CodeUnavailable,
			"model %q needs an API key: set PRISM_API_KEY or DEEPSEEK_API_KEY, or use the %q model", name, DemoModelName)
	}
	cfg := c.cfg.OpenAI
	cfg.Model = name
	return NewOpenAI(cfg)
}

package agenttest

import (
	"prism/core/agent"
	"prism/core/model"
)

// Script returns agent.Models that gives every session a fresh scripted
// model playing steps (no pacing), under the name "scripted".
func Script(steps ...model.Step) agent.Models { return scriptModels(steps) }

type scriptModels []model.Step

func (s scriptModels) New(string) (model.Model, error) {
	return model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: s}}), nil
}

func (scriptModels) Default() string { return "scripted" }

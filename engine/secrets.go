package engine

import "github.com/symbi-dev/symbi/plan"

// registerSecrets resolves, once per engine, every secret the plan can
// produce: each model's api_key_env, and every deferred string of models,
// tools, MCP servers and command scorers together with the environment
// values it reads (resolve registers them). They are then redacted from a
// run's very first line — its started event holds the input, which may
// quote a key — and from every request to a model, not only from the moment
// a model or a tool first uses them. A string that cannot be resolved now
// (a variable unset) registers what it read; its tool fails when called,
// as before.
func (e *Engine) registerSecrets() {
	e.secretsOnce.Do(func() {
		resolve := func(ss ...plan.String) {
			for _, s := range ss {
				_, _ = e.resolve(s)
			}
		}
		command := func(c *plan.CommandExec) {
			if c == nil {
				return
			}
			resolve(c.Argv...)
			for _, v := range c.Env {
				resolve(v)
			}
		}
		for _, m := range e.plan.Models {
			resolve(m.BaseURL)
			if m.APIKeyEnv != "" {
				if key, ok := e.opts.LookupEnv(m.APIKeyEnv); ok {
					e.addSecret(key)
				}
			}
		}
		for _, t := range e.plan.Tools {
			command(t.Executor.Command)
			if h := t.Executor.HTTP; h != nil {
				resolve(h.URL)
				for _, v := range h.Headers {
					resolve(v)
				}
			}
		}
		for _, s := range e.plan.MCPServers {
			resolve(s.Command...)
			resolve(s.URL)
			for _, v := range s.Env {
				resolve(v)
			}
		}
		for _, b := range e.plan.BestOfN {
			command(b.Scorer.Command)
		}
	})
}

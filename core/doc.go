// Package core is prism's domain: tool definitions, the schema DSL and its
// validation, the execution pipeline and its hooks, results and their
// projections, presentation views, session events and the session log.
//
// core imports nothing else of prism's and no web, template or database
// library; storage and transport are adapters around it.
package core

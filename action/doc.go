// Package action is the engine's reading of what an action does: shell
// command lines parsed into their simple commands (through wrappers,
// substitutions, here-documents and inline interpreter code), the paths,
// URLs, hosts and packages they name, and the findings a policy weighs
// (destructive deletes, download-and-run, exfiltration, persistence, ...).
//
// It interprets the AARTS event model (package aarts) and never changes
// it: an Analysis is derived from the verbatim tool input, never taken
// from artifacts a host supplied. The package is pure: no I/O, no clock.
package action

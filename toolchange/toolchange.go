// Package toolchange reads what an MCP server's re-declaration asks an
// approver to accept: for each tool that changed or appeared since it was
// pinned, its definition as pinned and as now declared, a line diff of the
// two, and the scan's flags with the words that raised them.
//
// The MCP gateway records these in the PreMCPConnect that re-declares a
// server (tool_changes, tool_definitions, pinned_definitions, tool_flags,
// tool_flag_words); Of reads them back from the recorded payload, so an
// approver's inbox and an auditor reading the ledger see the same thing.
// The package is pure: no I/O, no clock.
package toolchange

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/internal/linediff"
)

// Change is one tool of a re-declaration.
type Change struct {
	Name string `json:"name"`
	// Status is "changed" (pinned before, declared otherwise now), "added"
	// (never pinned) or "removed" (pinned, no longer declared).
	Status string `json:"status"`
	// Before and After are the definitions (name, description, schemas,
	// annotations) as pinned and as declared now, indented JSON with
	// sorted keys; empty where there is none (an added tool has no
	// Before, a removed one no After, and a pin recorded before
	// definitions were kept has no Before).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Diff is Before against After, line by line.
	Diff []Line `json:"diff,omitempty"`
	// Flags are what the scan found in the declared definition, each with
	// the words that raised it.
	Flags []Flag `json:"flags,omitempty"`
}

// Line is one line of a diff: Op is " " (in both), "-" (only before) or
// "+" (only after).
type Line = linediff.Line

// Flag is one finding of the scan of a tool's definition.
type Flag struct {
	Name  string   `json:"name"`
	Words []string `json:"words,omitempty"`
}

// Event is what Of reads of a PreMCPConnect.
type event struct {
	Changes *struct {
		Changed []string `json:"changed"`
		Added   []string `json:"added"`
		Removed []string `json:"removed"`
	} `json:"tool_changes"`
	Definitions map[string]json.RawMessage     `json:"tool_definitions"`
	Pinned      map[string]json.RawMessage     `json:"pinned_definitions"`
	Flags       map[string][]string            `json:"tool_flags"`
	Words       map[string]map[string][]string `json:"tool_flag_words"`
}

// Of reads the changes a PreMCPConnect payload declares, in the order
// changed, added, removed, each by name; nil when it declares none (a
// server's first declaration, or one that matches its pins).
func Of(payload []byte) []Change {
	var ev event
	if json.Unmarshal(payload, &ev) != nil || ev.Changes == nil {
		return nil
	}
	var out []Change
	add := func(names []string, status string) {
		names = slices.Clone(names)
		slices.Sort(names)
		for _, name := range names {
			c := Change{Name: name, Status: status}
			if status != "added" {
				c.Before = indent(ev.Pinned[name])
			}
			if status != "removed" {
				c.After = indent(ev.Definitions[name])
				c.Flags = flagsOf(ev.Flags[name], ev.Words[name])
			}
			if c.Before != "" || c.After != "" {
				c.Diff = Diff(c.Before, c.After)
			}
			out = append(out, c)
		}
	}
	add(ev.Changes.Changed, "changed")
	add(ev.Changes.Added, "added")
	add(ev.Changes.Removed, "removed")
	return out
}

func flagsOf(names []string, words map[string][]string) []Flag {
	var out []Flag
	for _, n := range names {
		out = append(out, Flag{Name: n, Words: words[n]})
	}
	return out
}

// indent is a definition as indented JSON with sorted keys ("" for none).
func indent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Diff is a line diff of before against after.
func Diff(before, after string) []Line { return linediff.Lines(lines(before), lines(after)) }

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

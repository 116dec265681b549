package reducer

import (
	"cmp"
	"slices"
)

// Inheritance is what a sub-agent's session takes from its parent's when
// it first names it (AARTS §8.5.1): the tool ceiling the parent's
// PreSubAgentSpawn verdict granted it, the parent's taint and data classes,
// and on whose behalf the parent acted. It is recorded in the verdict of
// the child's first event that names the parent, so that a rebuild or a
// replay folds the same ceiling the engine judged on.
type Inheritance struct {
	ParentSessionID string `json:"parent_session_id"`
	// Known is false when no session of that id exists in the tenant (or
	// its spawn of this child was never recorded): the child is then
	// judged as an orphan and its tool calls are denied.
	Known bool `json:"known"`
	// ParentSeq and ParentHash are the parent's head when the child
	// inherited: the state the ceiling was read from.
	ParentSeq  int64  `json:"parent_seq"`
	ParentHash string `json:"parent_hash,omitempty"`
	// PermittedTools is the ceiling: the tools the parent's spawn verdict
	// granted, nil when it set none. A child's own claims only narrow it.
	PermittedTools []string `json:"permitted_tools,omitempty"`
	TaintKinds     []string `json:"taint_kinds,omitempty"`
	DataClasses    []string `json:"data_classes,omitempty"`
	// Principal and Agent are the identity the parent acted for (AARM R6).
	Principal string `json:"principal,omitempty"`
	Agent     string `json:"agent,omitempty"`
	// Intent is what the user asked the parent, which the sub-agent's
	// calls answer to as well.
	Intent *Intent `json:"intent,omitempty"`
	// SpawnSessionID is the session the host reported the spawn in, where
	// it is not the parent's: a sub-agent another sub-agent started (a
	// host reports every spawn in its own session). The ceiling is then
	// the spawn's grant there, narrowed by the parent's own ceiling, and
	// the taint is both sessions'. SpawnSeq and SpawnHash are that
	// session's head when the child inherited.
	SpawnSessionID string `json:"spawn_session_id,omitempty"`
	SpawnSeq       int64  `json:"spawn_seq,omitempty"`
	SpawnHash      string `json:"spawn_hash,omitempty"`
}

// NeedsInheritance reports whether a sub-agent session has yet to inherit
// from a known parent: it never named one, or the one it named was
// unknown then (a later event that names it again tries again).
func (s Snapshot) NeedsInheritance() bool { return s.Inherited == nil || !s.Inherited.Known }

// Grant is a parent's spawn of one sub-agent: the PreSubAgentSpawn at Seq
// and, once its verdict is folded, the tools it granted.
type Grant struct {
	SubAgentID string `json:"sub_agent_id"`
	Seq        uint64 `json:"seq"`
	// Tools is the verdict's permitted_tools directive (nil: no ceiling).
	Tools []string `json:"tools,omitempty"`
	// Denied is true when the spawn was not allowed.
	Denied bool `json:"denied,omitempty"`
}

// maxGrants bounds Grants.
const maxGrants = 64

// InheritanceOf is what child inherits from parent, the parent's
// snapshot at head hash parentHead, or nil when the parent is not known;
// principal and agent are who the parent's session acted for.
func InheritanceOf(parentID string, parent *Snapshot, parentHead, child, principal, agent string) Inheritance {
	in := Inheritance{ParentSessionID: parentID, ParentSeq: -1}
	if parent == nil || parent.Seq < 0 {
		return in
	}
	i := len(parent.Grants) - 1 // the latest spawn of this child
	for i >= 0 && parent.Grants[i].SubAgentID != child {
		i--
	}
	if i < 0 {
		return in // the parent never spawned this child
	}
	g := parent.Grants[i]
	in.Known, in.ParentSeq = true, parent.Seq
	in.ParentHash = parentHead
	switch {
	case g.Denied || g.Tools != nil && len(g.Tools) == 0:
		in.PermittedTools = []string{NoTools}
	case g.Tools != nil:
		in.PermittedTools = slices.Clone(g.Tools)
	}
	in.TaintKinds = slices.Clone(parent.TaintKinds)
	in.DataClasses = slices.Clone(parent.DataClasses)
	in.Principal, in.Agent = principal, agent
	in.Intent = parent.Intent
	return in
}

// SpawnedElsewhere is what a child inherits whose spawn the host reported
// in another session than its parent's: spawn is what it inherits from
// that session (InheritanceOf), parent the parent's snapshot at head
// parentHead (nil: unknown, and the child is an orphan). The spawn's grant
// is narrowed by the parent's ceiling, and the parent's taint, data
// classes, identity and intent are added: a sub-agent never has more than
// the agent that started it.
func SpawnedElsewhere(spawn Inheritance, parentID string, parent *Snapshot, parentHead, principal, agent string) Inheritance {
	in := spawn
	in.SpawnSessionID, in.SpawnSeq, in.SpawnHash = spawn.ParentSessionID, spawn.ParentSeq, spawn.ParentHash
	in.ParentSessionID, in.ParentSeq, in.ParentHash = parentID, -1, ""
	if parent == nil || parent.Seq < 0 {
		in.Known = false
		return in
	}
	in.ParentSeq, in.ParentHash = parent.Seq, parentHead
	if parent.PermittedTools != nil {
		if in.PermittedTools == nil {
			in.PermittedTools = slices.Clone(parent.PermittedTools)
		} else {
			in.PermittedTools = narrow(in.PermittedTools, parent.PermittedTools)
		}
	}
	for _, k := range parent.TaintKinds {
		in.TaintKinds = addSorted(in.TaintKinds, k)
	}
	for _, c := range parent.DataClasses {
		in.DataClasses = addSorted(in.DataClasses, c)
	}
	in.Principal, in.Agent = cmp.Or(principal, in.Principal), cmp.Or(agent, in.Agent)
	if parent.Intent != nil {
		in.Intent = parent.Intent
	}
	return in
}

// Inherit returns s with in folded in (see Inheritance).
func (r *Reducer) Inherit(s Snapshot, in Inheritance) Snapshot {
	n := s.clone()
	n.inherit(in)
	return n
}

// inherit folds in into n (idempotent: a second fold of the same
// inheritance changes nothing).
func (n *Snapshot) inherit(in Inheritance) {
	c := in
	n.Inherited = &c
	n.ParentSessionID = in.ParentSessionID
	if in.PermittedTools != nil {
		n.PermittedTools = narrow(n.PermittedTools, in.PermittedTools)
	}
	for _, k := range in.TaintKinds {
		n.IsTainted = true
		n.TaintKinds = addSorted(n.TaintKinds, k)
	}
	for _, c := range in.DataClasses {
		n.DataClasses = addSorted(n.DataClasses, c)
	}
	if n.Intent == nil && in.Intent != nil {
		i := *in.Intent
		n.Intent = &i
	}
}

// narrow is the tools a session may use when it claims claimed (nil or
// empty: no claim) under ceiling: the claim can only narrow the ceiling.
// An empty result is "nothing", which the ceiling marks with an entry no
// tool has.
func narrow(claimed, ceiling []string) []string {
	if len(ceiling) == 0 {
		return []string{NoTools}
	}
	if len(claimed) == 0 {
		return slices.Clone(ceiling)
	}
	var out []string
	for _, t := range claimed {
		if slices.Contains(ceiling, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return []string{NoTools}
	}
	return out
}

// NoTools is the permitted_tools entry of a session that may use no tool:
// an empty list means "no restriction".
const NoTools = "(none)"

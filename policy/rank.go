package policy

import (
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/types"
)

// rankBuiltin is agentledger.rank(signals): the signal set ranked in one
// pass, as the default policy's verdict needs it. Written as comprehensions
// and sorts over the set, the ranking was half of an ordinary tool call's
// evaluation; here it is one walk of the set, in the set's own (sorted)
// order, and it gives what the comprehensions gave:
//
//   - winner: the strictest signal (deny > ask > allow), then the lowest
//     order, then the first in the set's order; absent for no signals;
//   - reasons: every signal's reason by order, signals of one order in the
//     set's order;
//   - artifacts: every signal's artifacts, sorted, without repeats;
//   - allow_directives: the directives of the allow signals in the set's
//     order, for object.union_n.
//
// A signal that is not what sig() builds (an object with a decision of
// allow, ask or deny, a numeric order and confidence, a reason, strings
// aarm_decision, reason_code, category and severity, a list of artifacts
// and, for an allow, an object of directives) halts the evaluation: a policy error,
// which the engine answers with a deny. (The comprehensions skipped such a
// signal, and a set of only such signals fell through to the default allow.)
var rankBuiltin = &ast.Builtin{
	Name: "agentledger.rank",
	Decl: types.NewFunction(
		types.Args(types.Named("signals", types.NewSet(types.A))),
		types.Named("ranking", types.NewObject(nil, types.NewDynamicProperty(types.S, types.A))),
	),
}

func init() {
	ast.RegisterBuiltin(rankBuiltin)
	topdown.RegisterBuiltinFunc(rankBuiltin.Name, rank)
}

var (
	rankDecision   = ast.StringTerm("decision")
	rankOrder      = ast.StringTerm("order")
	rankReason     = ast.StringTerm("reason")
	rankCode       = ast.StringTerm("reason_code")
	rankArtifacts  = ast.StringTerm("artifacts")
	rankDirectives = ast.StringTerm("directives")
	rankConfidence = ast.StringTerm("confidence")
	verdictStrings = []*ast.Term{ast.StringTerm("aarm_decision"), rankCode, ast.StringTerm("category"), ast.StringTerm("severity")}
	strictnessOf   = map[ast.String]int{"allow": 0, "ask": 1, "deny": 2}
)

// ranked is one signal and what ranks it.
type ranked struct {
	sig        ast.Object
	strictness int
	order      *ast.Term
	index      int
}

func rank(_ topdown.BuiltinContext, operands []*ast.Term, iter func(*ast.Term) error) error {
	set, ok := operands[0].Value.(ast.Set)
	if !ok {
		return topdown.Halt{Err: fmt.Errorf("agentledger.rank: the signals are a %s, not a set", ast.ValueName(operands[0].Value))}
	}
	sigs := make([]ranked, 0, set.Len())
	artifacts := ast.NewSet()
	var allowDirectives []*ast.Term
	for i, t := range set.Slice() {
		r, err := rankedOf(t, i)
		if err != nil {
			return topdown.Halt{Err: err}
		}
		sigs = append(sigs, r)
		if err := addArtifacts(artifacts, r.sig); err != nil {
			return topdown.Halt{Err: err}
		}
		if r.strictness == 0 {
			d := r.sig.Get(rankDirectives)
			if d == nil {
				return topdown.Halt{Err: fmt.Errorf("agentledger.rank: allow signal %s has no directives", codeOf(r.sig))}
			}
			if _, ok := d.Value.(ast.Object); !ok {
				return topdown.Halt{Err: fmt.Errorf("agentledger.rank: signal %s: directives are a %s, not an object", codeOf(r.sig), ast.ValueName(d.Value))}
			}
			allowDirectives = append(allowDirectives, d)
		}
	}
	// Reasons by order (a stable sort keeps the set's order within one).
	byOrder := slices.Clone(sigs)
	slices.SortStableFunc(byOrder, func(a, b ranked) int { return ast.Compare(a.order, b.order) })
	reasons := make([]*ast.Term, len(byOrder))
	for i, r := range byOrder {
		reasons[i] = r.sig.Get(rankReason)
	}
	out := ast.NewObject(
		ast.Item(ast.StringTerm("reasons"), ast.ArrayTerm(reasons...)),
		ast.Item(ast.StringTerm("artifacts"), ast.NewTerm(artifacts.Sorted())),
		ast.Item(ast.StringTerm("allow_directives"), ast.ArrayTerm(allowDirectives...)),
	)
	if len(sigs) > 0 {
		w := slices.MinFunc(sigs, func(a, b ranked) int {
			if a.strictness != b.strictness {
				return b.strictness - a.strictness
			}
			if c := ast.Compare(a.order, b.order); c != 0 {
				return c
			}
			return a.index - b.index
		})
		out.Insert(ast.StringTerm("winner"), ast.NewTerm(w.sig))
	}
	return iter(ast.NewTerm(out))
}

// rankedOf reads what ranks one signal, or says what it lacks.
func rankedOf(t *ast.Term, index int) (ranked, error) {
	s, ok := t.Value.(ast.Object)
	if !ok {
		return ranked{}, fmt.Errorf("agentledger.rank: a signal is a %s, not an object", ast.ValueName(t.Value))
	}
	r := ranked{sig: s, index: index}
	d := s.Get(rankDecision)
	ds, ok := ast.String(""), false
	if d != nil {
		ds, ok = d.Value.(ast.String)
	}
	if r.strictness, ok = strictnessOf[ds]; !ok || d == nil {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s: decision is %v, not allow, ask or deny", codeOf(s), d)
	}
	if r.order = s.Get(rankOrder); r.order == nil {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s has no order", codeOf(s))
	}
	if _, ok := r.order.Value.(ast.Number); !ok {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s: order is a %s, not a number", codeOf(s), ast.ValueName(r.order.Value))
	}
	if s.Get(rankReason) == nil {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s has no reason", codeOf(s))
	}
	// What the verdict is built from: a winner without one of these would
	// leave the decision undefined, and the policy's default allow would
	// answer.
	for _, k := range verdictStrings {
		name := string(k.Value.(ast.String))
		if v := s.Get(k); v == nil {
			return ranked{}, fmt.Errorf("agentledger.rank: signal %s has no %s", codeOf(s), name)
		} else if _, ok := v.Value.(ast.String); !ok {
			return ranked{}, fmt.Errorf("agentledger.rank: signal %s: %s is a %s, not a string", codeOf(s), name, ast.ValueName(v.Value))
		}
	}
	if c := s.Get(rankConfidence); c == nil {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s has no confidence", codeOf(s))
	} else if _, ok := c.Value.(ast.Number); !ok {
		return ranked{}, fmt.Errorf("agentledger.rank: signal %s: confidence is a %s, not a number", codeOf(s), ast.ValueName(c.Value))
	}
	return r, nil
}

// addArtifacts adds a signal's artifacts (a list or a set) to into.
func addArtifacts(into ast.Set, s ast.Object) error {
	a := s.Get(rankArtifacts)
	if a == nil {
		return fmt.Errorf("agentledger.rank: signal %s has no artifacts", codeOf(s))
	}
	switch v := a.Value.(type) {
	case *ast.Array:
		v.Foreach(into.Add)
	case ast.Set:
		v.Foreach(into.Add)
	default:
		return fmt.Errorf("agentledger.rank: signal %s: artifacts are a %s, not a list", codeOf(s), ast.ValueName(a.Value))
	}
	return nil
}

// codeOf names a signal in an error: its reason code, if it has one.
func codeOf(s ast.Object) string {
	if c := s.Get(rankCode); c != nil {
		return c.String()
	}
	return "(no reason_code)"
}

package policy

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
)

// toValue converts plain values (as encoding/json produces them, and the
// Go scalar and slice types the snapshot and analysis maps hold) to OPA
// values without reflection.
func toValue(v any) (ast.Value, error) {
	switch x := v.(type) {
	case nil:
		return ast.Null{}, nil
	case bool:
		return ast.Boolean(x), nil
	case string:
		return ast.String(x), nil
	case json.Number:
		return ast.Number(x), nil
	case float64:
		return ast.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case int:
		return ast.Number(strconv.Itoa(x)), nil
	case int64:
		return ast.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return ast.Number(strconv.FormatUint(x, 10)), nil
	case []string:
		terms := make([]*ast.Term, len(x))
		for i, s := range x {
			terms[i] = ast.StringTerm(s)
		}
		return ast.NewArray(terms...), nil
	case []uint64:
		terms := make([]*ast.Term, len(x))
		for i, n := range x {
			terms[i] = ast.NewTerm(ast.Number(strconv.FormatUint(n, 10)))
		}
		return ast.NewArray(terms...), nil
	case []any:
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := toValue(e)
			if err != nil {
				return nil, err
			}
			terms[i] = ast.NewTerm(ev)
		}
		return ast.NewArray(terms...), nil
	case map[string]any:
		kvs := make([][2]*ast.Term, 0, len(x))
		for k, e := range x {
			ev, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			kvs = append(kvs, [2]*ast.Term{ast.StringTerm(k), ast.NewTerm(ev)})
		}
		return ast.NewObject(kvs...), nil
	}
	return ast.InterfaceToValue(v)
}

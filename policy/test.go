package policy

import (
	"context"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

func inmemStore(data map[string]any) storage.Store { return inmem.NewFromObject(data) }

// TestResult is the outcome of one Rego test rule.
type TestResult struct {
	Name string // package.rule
	Pass bool
	Err  error
	File string
	Line int
}

// Test runs the policy's *_test.rego rules with OPA's tester and returns
// their results sorted by name. Policies without tests return none.
func (p *Policy) Test(ctx context.Context) ([]TestResult, error) {
	data := p.data
	if data == nil {
		data = map[string]any{}
	}
	ch, err := tester.NewRunner().
		SetModules(p.modules).
		SetStore(inmemStore(data)).
		RaiseBuiltinErrors(true).
		SetParallel(1).
		RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: tests: %w", ErrPolicy, err)
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Name: r.Package + "." + r.Name, Pass: r.Pass(), Err: r.Error}
		if r.Location != nil {
			tr.File, tr.Line = r.Location.File, r.Location.Row
		}
		out = append(out, tr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

package cmdline

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"input", fmt.Errorf("line 3: %w", &ledger.InputError{Msg: "x", Offset: -1}), ExitUsage},
		{"integrity", fmt.Errorf("head: %w", &ledger.ChainError{Kind: ledger.HashMismatch}), ExitFault},
		{"mismatch", fmt.Errorf("import: %w", store.ErrSessionMismatch), ExitFault},
		{"unavailable", fmt.Errorf("connect: %w", store.ErrUnavailable), ExitUnavailable},
		{"internal", errors.New("boom"), ExitUnavailable},
		{"explicit", Usage(errors.New("bad flag")), ExitUsage},
	}
	for _, tt := range tests {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPermute(t *testing.T) {
	app := &cli.App{
		Flags: GlobalFlags(),
		Commands: []*cli.Command{WithGlobals(&cli.Command{Name: "show", Flags: []cli.Flag{
			&cli.StringFlag{Name: "tenant"}, &cli.BoolFlag{Name: "deep"},
		}}), {Name: "hook", Subcommands: []*cli.Command{{Name: "claude-code", Flags: []cli.Flag{&cli.StringFlag{Name: "engine"}}}}}},
	}
	tests := []struct{ in, want []string }{
		{[]string{"x", "show", "S", "--tenant", "acme"}, []string{"x", "show", "--tenant", "acme", "S"}},
		{[]string{"x", "--data", "d", "show", "S", "--deep", "T"}, []string{"x", "--data", "d", "show", "--deep", "S", "T"}},
		{[]string{"x", "show", "S", "--format=json", "--", "--tenant"}, []string{"x", "show", "--format=json", "S", "--", "--tenant"}},
		{[]string{"x", "show", "-", "--data", "d"}, []string{"x", "show", "--data", "d", "-"}},
		{[]string{"x", "nosuch", "a", "--b"}, []string{"x", "nosuch", "a", "--b"}},
		{[]string{"x", "hook", "claude-code", "--engine", "http://e"}, []string{"x", "hook", "claude-code", "--engine", "http://e"}},
	}
	for _, tt := range tests {
		if got := Permute(app, tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Permute(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

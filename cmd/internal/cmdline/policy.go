package cmdline

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
)

// PolicyFlag is the --policy flag of every program that evaluates.
func PolicyFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "policy", Usage: "Rego policy `DIR` or bundle file (default: the built-in policy); repeat it to layer policies, \"default\" naming the built-in one"}
}

// LoadPolicy loads a capability manifest (manifestPath "" is the built-in
// one) and the policy layers at paths (none: the built-in policy). A bad
// file is exit 2, naming it.
func LoadPolicy(ctx context.Context, paths []string, manifestPath string, adjust ...func(*manifest.Manifest)) (*policy.Policy, error) {
	m, err := policy.LoadManifest(manifestPath)
	if err != nil {
		return nil, Usage(err)
	}
	for _, f := range adjust {
		f(m)
	}
	p, err := policy.LoadLayers(ctx, paths, m)
	if err != nil {
		return nil, Usage(err)
	}
	return p, nil
}

// Protect returns the manifest adjustment of an engine that runs on the
// given directories and files (its data directory, checkpoint directory,
// signing key): they become protected data no tool may touch, and ~ in
// commands is read as this user's home directory.
func Protect(paths ...string) func(*manifest.Manifest) {
	return func(m *manifest.Manifest) {
		if home, err := os.UserHomeDir(); err == nil && m.Home == "" && filepath.IsAbs(home) {
			m.Home = filepath.Clean(home)
		}
		for _, p := range paths {
			if p == "" {
				continue
			}
			if abs, err := filepath.Abs(p); err == nil && !slices.Contains(m.ProtectedData, abs) {
				m.ProtectedData = append(m.ProtectedData, abs)
			}
		}
	}
}

// ProtectWrites returns a manifest adjustment that keeps every tool from
// changing paths (files or directories): the engine's own program (every
// hook runs it) and the policy and manifest it judges with. Reading them
// stays allowed. Symlinks are protected as written and as resolved.
func ProtectWrites(paths ...string) func(*manifest.Manifest) {
	return func(m *manifest.Manifest) {
		for _, p := range paths {
			if p == "" || p == "default" {
				continue
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				continue
			}
			for _, q := range []string{abs, resolved(abs)} {
				if q != "" && !slices.Contains(m.Protected, q) {
					m.Protected = append(m.Protected, q)
				}
			}
		}
	}
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// Package purity holds the check that keeps agentledger's pure packages
// pure, for their tests: what a package imports itself, and what it
// depends on at all, read with go list.
package purity

import (
	"os/exec"
	"strings"
	"testing"
)

// IO reports whether an import path gives a package I/O, a clock or
// randomness of its own (net/url, a parser, is allowed).
func IO(imp string) bool {
	switch {
	case imp == "os", imp == "time", imp == "log", imp == "syscall", imp == "math/rand", imp == "math/rand/v2", imp == "crypto/rand",
		strings.HasPrefix(imp, "net") && imp != "net/url", strings.HasPrefix(imp, "os/"), strings.HasPrefix(imp, "log/"):
		return true
	}
	return false
}

// Check fails t for each import of the package in the current directory
// for which badImport is true, and each package it depends on for which
// badDep is true.
func Check(t testing.TB, badImport, badDep func(string) bool) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if badImport(imp) {
			t.Errorf("imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(deps)) {
		if badDep(d) {
			t.Errorf("depends on %s", d)
		}
	}
}

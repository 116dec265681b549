package action

import "testing"

// TestInstallsPackagesAgreesWithAnalysis: the adapter's quick reading of
// package installs names the same tool as the whole analysis on the
// ordinary and attack tables.
func TestInstallsPackagesAgreesWithAnalysis(t *testing.T) {
	var table []string
	for _, a := range attacks() {
		table = append(table, a.cmd)
	}
	table = append(table, ordinary...)
	for _, c := range table {
		in := map[string]any{"command": c}
		if got, want := InstallsPackages("Bash", in, "/w"), AnalyzeTool("Bash", in, "/w").Tool == "package_install"; got != want {
			t.Errorf("%q: InstallsPackages %v, analysis says %v", c, got, want)
		}
	}
}

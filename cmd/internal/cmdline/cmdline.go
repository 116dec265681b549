// Package cmdline holds what agentledger's command-line programs share,
// one file per concern:
//
//   - exit.go: exit codes, and the errors that carry them;
//   - flags.go: the global flags and their resolution (flag after the
//     command, flag before it, environment, default);
//   - store.go: opening the ledger's store, through the local engine that
//     holds a data directory;
//   - localengine.go: the local engine a command starts and keeps up, and
//     the data directories hooks record into;
//   - keys.go: signing and sealing keys;
//   - policy.go: loading the policy, and the paths it protects;
//   - output.go: output formats and the progress bar;
//   - run.go: running a program (argument order, usage errors);
//   - cmdline.go: the version.
package cmdline

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is what --version prints: agentledger's version, the commit it
// was built from (with "-dirty" for uncommitted changes) and the Go
// version, as the build recorded them.
func Version() string {
	version, commit, dirty, goVersion := "devel", "unknown", false, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "-dirty"
	}
	return fmt.Sprintf("%s (commit %s, %s)", version, commit, goVersion)
}

package hookwire

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// UserDataDir is the per-user data directory hooks and commands use when
// neither --data nor LEDGER_DATA says otherwise: $XDG_DATA_HOME/agentledger,
// else ~/.local/share/agentledger. It lies outside every project, so an
// agent working in a project never finds the ledger or its keys there.
func UserDataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentledger"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no --data given and no home directory for the default: %w", err)
	}
	return filepath.Join(home, ".local", "share", "agentledger"), nil
}

// EngineProgram is the engine program: this program when it is one, else
// the one beside it, else the one on PATH; "" when there is none.
func EngineProgram() string {
	if exe, err := os.Executable(); err == nil {
		if filepath.Base(exe) == "engine" {
			return exe
		}
		if p := filepath.Join(filepath.Dir(exe), "engine"); IsProgram(p) {
			return p
		}
	}
	if p, err := exec.LookPath("engine"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// IsProgram reports whether p is an executable file.
func IsProgram(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

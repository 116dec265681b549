package aarts

import "strings"

// installers maps a package manager's binary to the subcommands that
// install packages, and the manager name recorded.
var installers = map[string]struct {
	manager string
	verbs   []string // argv[1] values; nil: argv[1:] are packages (e.g. pipx? no)
}{
	"npm":      {"npm", []string{"i", "install", "add", "isntall"}},
	"pnpm":     {"npm", []string{"add", "i", "install"}},
	"yarn":     {"npm", []string{"add"}},
	"bun":      {"npm", []string{"add", "install", "i"}},
	"npx":      {"npm", nil},
	"pip":      {"pypi", []string{"install"}},
	"pip3":     {"pypi", []string{"install"}},
	"pipx":     {"pypi", []string{"install", "run"}},
	"uv":       {"pypi", []string{"add"}},
	"poetry":   {"pypi", []string{"add"}},
	"conda":    {"conda", []string{"install"}},
	"go":       {"go", []string{"get", "install"}},
	"cargo":    {"crates", []string{"add", "install"}},
	"gem":      {"rubygems", []string{"install"}},
	"bundle":   {"rubygems", []string{"add"}},
	"apt-get":  {"apt", []string{"install"}},
	"apt":      {"apt", []string{"install"}},
	"yum":      {"rpm", []string{"install"}},
	"dnf":      {"rpm", []string{"install"}},
	"apk":      {"apk", []string{"add"}},
	"brew":     {"brew", []string{"install"}},
	"composer": {"packagist", []string{"require"}},
	"dotnet":   {"nuget", []string{"add"}},
	"nuget":    {"nuget", []string{"install"}},
}

// flagsWithValue are installer flags whose next argument is not a package.
var flagsWithValue = map[string]bool{
	"-r": true, "--requirement": true, "-c": true, "--constraint": true, "-e": true, "--editable": true,
	"-i": true, "--index-url": true, "--extra-index-url": true, "--registry": true, "-t": true, "--target": true,
	"--prefix": true, "-C": true, "--cwd": true, "--version": true, "-f": true, "--find-links": true,
	"--python": true, "-p": true, "--source": true, "--channel": true,
}

// packagesOf returns the packages a command installs.
func packagesOf(c Command) []Package {
	argv := c.Argv
	bin := c.Binary
	// python -m pip install ..., uv pip install ..., dotnet add package X
	switch {
	case (strings.HasPrefix(bin, "python")) && len(argv) > 3 && argv[1] == "-m" && (argv[2] == "pip" || argv[2] == "pip3"):
		bin, argv = "pip", argv[2:]
	case bin == "uv" && len(argv) > 2 && argv[1] == "pip":
		bin, argv = "pip", argv[1:]
	case bin == "dotnet" && len(argv) > 3 && argv[1] == "add" && argv[3] != "package":
		return nil
	}
	inst, ok := installers[bin]
	if !ok {
		return nil
	}
	start := 1
	if inst.verbs != nil {
		// Global flags may come before the verb (npm --prefix x install y).
		found := false
		for i := 1; i < len(argv); i++ {
			if strings.HasPrefix(argv[i], "-") {
				if flagsWithValue[argv[i]] {
					i++
				}
				continue
			}
			for _, v := range inst.verbs {
				if argv[i] == v {
					found = true
				}
			}
			start = i + 1
			break
		}
		if !found {
			return nil
		}
	}
	if bin == "dotnet" && start < len(argv) && argv[start] == "package" {
		start++
	}
	var out []Package
	for i := start; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			continue
		}
		if strings.HasPrefix(a, "-") {
			if flagsWithValue[a] {
				i++
			}
			continue
		}
		if looksPath(a) && !strings.Contains(a, "@") && inst.manager != "go" {
			continue // a local directory or file, not a registry package
		}
		if bin == "npx" {
			out = append(out, splitPackage(inst.manager, a))
			break // npx runs its first argument; the rest are its arguments
		}
		out = append(out, splitPackage(inst.manager, a))
	}
	return out
}

// splitPackage splits name@version, name==version and similar.
func splitPackage(manager, spec string) Package {
	p := Package{Manager: manager, Name: spec}
	switch manager {
	case "pypi":
		for _, sep := range []string{"===", "==", ">=", "<=", "~=", "!=", ">", "<"} {
			if i := strings.Index(spec, sep); i > 0 {
				p.Name, p.Version = spec[:i], strings.TrimPrefix(spec[i:], "==")
				break
			}
		}
		if i := strings.IndexByte(p.Name, '['); i > 0 {
			p.Name = p.Name[:i]
		}
		p.Name = strings.ToLower(p.Name)
	case "apt", "rpm":
		if i := strings.IndexByte(spec, '='); i > 0 {
			p.Name, p.Version = spec[:i], spec[i+1:]
		}
	default:
		// @scope/name@version, name@version, module@version
		at := strings.LastIndexByte(spec, '@')
		if at > 0 {
			p.Name, p.Version = spec[:at], spec[at+1:]
		}
	}
	return p
}

package action

import (
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
)

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
		p := splitPackage(inst.manager, a)
		p.Suspect = suspectOf(p.Manager, p.Name)
		out = append(out, p)
		if bin == "npx" {
			break // npx runs its first argument; the rest are its arguments
		}
	}
	return out
}

// popular are names typosquatters imitate, by manager. An install of a name
// one edit away from one of these (and not itself listed) is suspect.
var popular = map[string][]string{
	"npm": {"react", "react-dom", "lodash", "express", "axios", "chalk", "commander", "debug", "moment", "request",
		"typescript", "webpack", "eslint", "prettier", "jest", "mocha", "vue", "next", "dotenv", "uuid", "yargs",
		"left-pad", "colors", "async", "underscore", "jquery", "body-parser", "cross-env", "nodemon", "electron"},
	"pypi": {"requests", "numpy", "pandas", "urllib3", "boto3", "botocore", "setuptools", "six", "django", "flask",
		"pyyaml", "cryptography", "jinja2", "pytest", "scipy", "matplotlib", "pillow", "sqlalchemy", "beautifulsoup4",
		"tensorflow", "torch", "scikit-learn", "python-dateutil", "certifi", "idna", "colorama", "openai", "httpx"},
	"crates":   {"serde", "tokio", "rand", "clap", "regex", "reqwest", "anyhow", "thiserror", "serde_json", "log"},
	"rubygems": {"rails", "rake", "bundler", "nokogiri", "rspec", "devise", "puma"},
}

// suspectOf returns the popular package name is one edit away from.
func suspectOf(manager, name string) string {
	list := popular[manager]
	n := strings.ToLower(name)
	if len(n) < 4 {
		return ""
	}
	for _, p := range list {
		if p == n {
			return ""
		}
	}
	for _, p := range list {
		if editDistanceOne(n, p) {
			return p
		}
	}
	return ""
}

// editDistanceOne reports whether a becomes b by one insertion, deletion,
// substitution or transposition of adjacent characters.
func editDistanceOne(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	switch {
	case la == lb:
		diff := -1
		for i := 0; i < la; i++ {
			if a[i] != b[i] {
				if diff >= 0 {
					// A transposition of adjacent characters?
					return i == diff+1 && a[diff] == b[i] && a[i] == b[diff] && a[i+1:] == b[i+1:]
				}
				diff = i
			}
		}
		return true
	case la == lb+1:
		a, b = b, a
		fallthrough
	case lb == la+1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
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

// InstallsPackages reports whether a shell tool call installs packages
// (AARTS §7 package_install), reading only its command lines' commands —
// what an adapter needs to name the call's tool, without the whole
// analysis the engine makes of it (AnalyzeTool, whose Tool says the same
// for every call but those whose installs hide in code or decoded text).
func InstallsPackages(native string, input any, cwd string) bool {
	if aarts.Canonical(native) != aarts.ToolShell {
		return false
	}
	found := false
	walkStrings(input, "", func(field, s string) {
		if f := strings.ToLower(field); !found && (f == "command" || f == "cmd" || f == "script" || f == "commands") {
			found = slices.ContainsFunc(ParseShell(s), func(c Command) bool { return len(packagesOf(c)) > 0 })
		}
	})
	return found
}

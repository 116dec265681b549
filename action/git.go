package action

import (
	"regexp"
	"slices"
	"strings"
)

// What git runs besides itself. Git runs programs its configuration names
// (core.fsmonitor, aliases, diff and merge drivers, credential helpers,
// trailer commands, ...), programs its options name (--upload-pack, rebase
// --exec, grep -O, difftool -x, merge strategies), git-<name> programs on
// PATH for subcommands it does not have, and the transports of URLs like
// ext::. New ones appear with every release, so the reading works from
// what is known to be inert: configuration keys and subcommands on
// allow-lists; anything else is a caveat (never explicitly allowed). Where
// the program is on the line, it is read as the commands it is.

// gitProgramKeys are configuration keys whose value is a command line git
// runs (an alias runs one when it starts with !).
var gitProgramKeys = regexp.MustCompile(`(?i)^(?:core\.(?:fsmonitor|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)|` +
	`diff\.external|diff\..+\.(?:textconv|command)|difftool\..+\.cmd|mergetool\..+\.cmd|merge\..+\.driver|filter\..+\.(?:clean|smudge|process)|` +
	`credential(?:\..*)?\.helper|gpg(?:\..+)?\.program|gpg\.ssh\.defaultkeycommand|sequence\.editor|pager\..+|alias\..+|` +
	`uploadpack\.packobjectshook|remote\..+\.(?:uploadpack|receivepack|proxy)|trailer\..+\.(?:cmd|command)|hook\..+\.command|` +
	`interactive\.difffilter|sendemail\.(?:sendmailcmd|smtpserver|tocmd|cccmd)|web\.browser|browser\..+\.cmd|man\..+\.cmd)$`)

// gitInertKeys are configuration keys (and key prefixes, ending in ".")
// that change nothing git runs or where it reaches.
var gitInertKeys = []string{"user.name", "user.email", "color.", "advice.", "core.quotepath", "core.autocrlf", "core.safecrlf",
	"core.filemode", "core.ignorecase", "core.whitespace", "core.abbrev", "init.defaultbranch", "pull.rebase", "pull.ff", "merge.ff",
	"merge.conflictstyle", "log.", "format.pretty", "diff.noprefix", "diff.renames", "diff.algorithm", "diff.colormoved", "status.",
	"commit.verbose", "gc.auto", "fetch.prune", "rebase.autosquash", "rebase.autostash", "push.autosetupremote", "protocol.version",
	"i18n.", "blame.", "branch.sort", "tag.sort", "column.", "help.autocorrect", "rerere.enabled", "safe.bareRepository"}

func gitInertKey(key string) bool {
	key = strings.ToLower(key)
	return slices.ContainsFunc(gitInertKeys, func(k string) bool {
		k = strings.ToLower(k)
		return key == k || strings.HasSuffix(k, ".") && strings.HasPrefix(key, k)
	})
}

// gitRuns returns the command line a configuration value makes git run,
// or "" when it names none.
func gitRuns(key, value string) string {
	if strings.HasPrefix(strings.ToLower(key), "alias.") {
		cmd, ok := strings.CutPrefix(value, "!")
		if !ok {
			return ""
		}
		return cmd
	}
	if gitProgramKeys.MatchString(key) {
		return value
	}
	return ""
}

// gitSubcommands are git's own subcommands (git-<anything else> is a
// program on PATH or an alias).
var gitSubcommands = map[string]bool{"add": true, "am": true, "annotate": true, "apply": true, "archive": true, "bisect": true, "blame": true,
	"branch": true, "bundle": true, "cat-file": true, "check-attr": true, "check-ignore": true, "check-ref-format": true, "checkout": true,
	"cherry": true, "cherry-pick": true, "clean": true, "clone": true, "commit": true, "commit-graph": true, "config": true, "count-objects": true,
	"describe": true, "diff": true, "diff-files": true, "diff-index": true, "diff-tree": true, "fetch": true, "for-each-ref": true,
	"format-patch": true, "fsck": true, "gc": true, "grep": true, "hash-object": true, "help": true, "init": true, "log": true, "ls-files": true,
	"ls-remote": true, "ls-tree": true, "maintenance": true, "merge": true, "merge-base": true, "mv": true, "name-rev": true, "notes": true,
	"prune": true, "pull": true, "push": true, "range-diff": true, "read-tree": true, "rebase": true, "reflog": true, "remote": true,
	"repack": true, "replace": true, "reset": true, "restore": true, "rev-list": true, "rev-parse": true, "revert": true, "rm": true,
	"shortlog": true, "show": true, "show-branch": true, "show-ref": true, "sparse-checkout": true, "stash": true, "status": true,
	"submodule": true, "switch": true, "symbolic-ref": true, "tag": true, "update-index": true, "update-ref": true, "var": true,
	"verify-commit": true, "verify-tag": true, "version": true, "whatchanged": true, "worktree": true, "write-tree": true,
	"interpret-trailers": true, "difftool": true, "mergetool": true, "filter-branch": true, "hook": true, "send-email": true,
	"request-pull": true, "credential": true, "daemon": true, "instaweb": true}

// gitTreeWriters are subcommands that write the work tree.
var gitTreeWriters = map[string]bool{"checkout": true, "restore": true, "reset": true, "switch": true, "clean": true, "stash": true,
	"merge": true, "pull": true, "rm": true, "mv": true, "apply": true, "am": true, "cherry-pick": true, "revert": true,
	"read-tree": true, "checkout-index": true, "rebase": true, "sparse-checkout": true}

// gitRunners are subcommands that run programs by design.
var gitRunners = map[string]string{"difftool": "runs a diff tool", "mergetool": "runs a merge tool", "filter-branch": "runs the filters it is given",
	"hook": "runs the repository's hooks", "send-email": "runs a mailer", "credential": "runs credential helpers", "daemon": "serves the repository",
	"instaweb": "runs a web server", "interpret-trailers": "runs trailer commands"}

// gitOptionPrograms are long options that name a program, a file git
// reads configuration or templates from, or another repository; git takes
// any unambiguous prefix of a long option, so --upl is --upload-pack.
var gitOptionPrograms = []string{"--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager", "--exec-path",
	"--template", "--git-dir", "--work-tree", "--config-env", "--config", "--strategy", "--tool", "--separate-git-dir", "--reference"}

// gitBuiltinStrategies are merge strategies git has itself.
var gitBuiltinStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// gitCaveats reads what a git command makes git run and what it writes.
func (a *Analysis) gitCaveats(c Command, dir string, add func(string), addFinding func(string, string, string, float64)) {
	runs := func(why, cmd string) {
		add("git runs " + cmd + " (" + why + ")")
		if cmd != "" && len(a.Commands) < 256 {
			a.addShell(cmd, dir, 1)
		}
	}
	config := func(how, key, value string) {
		switch {
		case gitRuns(key, value) != "":
			runs(how+" "+key, gitRuns(key, value))
		case strings.HasPrefix(strings.ToLower(key), "alias."):
			add(how + " " + key + " makes git run " + value)
		case !gitInertKey(key):
			add(how + " " + key + " changes what git runs or where it reaches")
		}
	}
	sub, subAt := "", len(c.Argv)
	workTree := ""
	for _, e := range c.Env {
		if v, ok := strings.CutPrefix(e, "GIT_WORK_TREE="); ok {
			workTree = v
		}
	}
	for i := 1; i < len(c.Argv); i++ {
		arg := c.Argv[i]
		long, value, hasValue := strings.Cut(arg, "=")
		switch {
		case sub == "" && (arg == "-c" && i+1 < len(c.Argv) || strings.HasPrefix(arg, "-c") && len(arg) > 2):
			// git's own -c, before the subcommand (git switch -c BRANCH
			// is the subcommand's).
			kv := strings.TrimPrefix(arg, "-c")
			if arg == "-c" {
				kv = c.Argv[i+1]
				i++
			}
			k, v, _ := strings.Cut(kv, "=")
			config("git -c", k, v)
			if strings.EqualFold(k, "core.worktree") {
				workTree = v
			}
			continue
		case sub == "" && arg == "-C" && i+1 < len(c.Argv):
			dir = resolve(c.Argv[i+1], dir)
			i++
			continue
		case strings.HasPrefix(arg, "--") && len(long) > 2:
			for _, o := range gitOptionPrograms {
				if !strings.HasPrefix(o, long) || sub != "" && (o == "--config" || o == "--reference") && long != o {
					continue
				}
				if !hasValue && i+1 < len(c.Argv) && o != "--exec-path" {
					value = c.Argv[i+1]
					i++
				}
				switch o {
				case "--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager":
					runs(o, value)
				case "--strategy":
					if !slices.Contains(gitBuiltinStrategies, value) {
						add("git " + o + " " + value + " runs git-merge-" + value)
					}
				case "--config":
					if k, v, ok := strings.Cut(value, "="); ok {
						config("git --config", k, v)
					}
				default:
					add("git " + o + " changes what git runs or reads")
				}
				if o == "--work-tree" {
					workTree = value
				}
				break
			}
			if len(long) >= 5 && strings.HasPrefix("--output", long) {
				if !hasValue && i+1 < len(c.Argv) {
					value = c.Argv[i+1]
					i++
				}
				a.gitWrites(value, dir)
			}
			continue
		case sub == "" && !strings.HasPrefix(arg, "-"):
			sub, subAt = arg, i
			continue
		}
		if sub == "" || !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") || len(arg) < 2 {
			continue
		}
		// Short options of the subcommand, bundled (-qu CMD), alone or
		// stuck to their value (-x'CMD').
		flag, value, took := gitShortValue(sub, arg, c.Argv, i)
		if took {
			i++
		}
		switch {
		case flag == 0:
		case flag == 'u' && sub == "clone",
			flag == 'x' && (sub == "rebase" || sub == "difftool"),
			flag == 'O' && sub == "grep":
			runs("-"+string(flag), value)
		case flag == 's' && (sub == "merge" || sub == "pull" || sub == "rebase") && !slices.Contains(gitBuiltinStrategies, value):
			add("git " + sub + " -s " + value + " runs git-merge-" + value)
		case flag == 'c' && sub == "clone":
			if k, v, ok := strings.Cut(value, "="); ok {
				config("git clone -c", k, v)
			}
		case flag == 'o' && (sub == "archive" || sub == "format-patch"):
			a.gitWrites(value, dir)
		}
	}
	if sub == "" {
		return
	}
	args := c.Argv[subAt+1:]
	if workTree != "" && gitTreeWriters[sub] {
		// Another work tree: what git checks out, resets or cleans is
		// written there, whatever paths the command names.
		a.gitWrites(strings.TrimSuffix(workTree, "/")+"/*", dir)
	}
	if !gitSubcommands[sub] {
		add("git " + sub + " is not a git command: an alias or a git-" + sub + " program runs")
	}
	if why, ok := gitRunners[sub]; ok {
		add("git " + sub + " " + why)
	}
	for _, arg := range args {
		if strings.HasPrefix(arg, "ext::") || strings.HasPrefix(arg, "fd::") {
			add("git reaches " + arg + " through a transport that runs a command")
		}
	}
	ops := operands(append([]string{"git"}, args...))
	switch sub {
	case "config":
		a.gitConfig(args, add, config, addFinding)
	case "submodule":
		if len(ops) >= 2 && ops[0] == "foreach" {
			runs("submodule foreach", strings.Join(ops[1:], " "))
		}
	case "bisect":
		if len(ops) >= 2 && ops[0] == "run" {
			runs("bisect run", strings.Join(ops[1:], " "))
		}
	case "checkout", "restore":
		if i := slices.Index(args, "--"); i >= 0 {
			for _, p := range args[i+1:] {
				a.gitWrites(p, dir)
			}
		} else if sub == "restore" {
			for _, p := range ops {
				a.gitWrites(p, dir)
			}
		}
	case "apply", "am":
		add("git " + sub + " writes the files its patch names")
		if c.Heredoc != "" {
			for _, l := range strings.Split(c.Heredoc, "\n") {
				if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
					a.gitWrites(strings.TrimSpace(p), dir)
				}
			}
		}
	case "init":
		if slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, "--template") }) {
			add("git init --template copies hooks from another directory")
		}
	case "clean", "stash":
		if UntrackedTaken(c) == "" {
			return
		}
		add("git " + sub + " takes untracked files away (the project's own hook configuration may be among them)")
		if what := dangerousTarget(dir, ""); sub == "clean" && dir != "" && what != "" && what != "the working directory" {
			addFinding(FindDestructive, "git clean", "git clean in "+dir+" deletes every untracked file of "+what, 1)
		}
	}
}

// Untracked files a git command takes away.
const (
	TakesUntracked = "untracked" // not ignored: git clean -f, git stash -u
	TakesIgnored   = "ignored"   // only ignored: git clean -fX
	TakesAll       = "all"       // both: git clean -fx, git stash -a
)

// UntrackedTaken says which untracked files a git command deletes or
// stashes away from the work tree (TakesUntracked, TakesIgnored,
// TakesAll), or "" for none (a dry run, any other command).
func UntrackedTaken(c Command) string {
	if c.Binary != "git" {
		return ""
	}
	sub, args := gitSub(c.Argv)
	short := func(f rune, long string) bool {
		return slices.ContainsFunc(args, func(s string) bool {
			return long != "" && s == long || strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.ContainsRune(s, f)
		})
	}
	switch {
	case sub == "clean" && short('f', "--force") && !short('n', "--dry-run"):
		switch {
		case short('X', ""):
			return TakesIgnored
		case short('x', ""):
			return TakesAll
		}
		return TakesUntracked
	case sub == "stash" && (slices.Contains(args, "-a") || slices.Contains(args, "--all")):
		return TakesAll
	case sub == "stash" && (slices.Contains(args, "-u") || slices.Contains(args, "--include-untracked")):
		return TakesUntracked
	}
	return ""
}

// gitValueFlags are, per subcommand, the short options that take a value.
var gitValueFlags = map[string]string{"clone": "ucobj", "rebase": "xsXC", "merge": "sXmF", "pull": "sX", "grep": "OefABCm",
	"difftool": "xt", "archive": "o", "format-patch": "ov", "commit": "mFcCt", "tag": "mFu", "log": "nS", "diff": "SGU"}

// gitShortValue reads a cluster of short options (-qu CMD, -x'CMD'):
// the first letter in it that takes a value, that value (the rest of the
// cluster, or the next argument, in which case took is true), or 0.
func gitShortValue(sub, arg string, argv []string, i int) (flag byte, value string, took bool) {
	letters := gitValueFlags[sub]
	for j := 1; j < len(arg); j++ {
		if strings.IndexByte(letters, arg[j]) < 0 {
			continue
		}
		if rest := arg[j+1:]; rest != "" {
			return arg[j], strings.TrimPrefix(rest, "="), false
		}
		if i+1 < len(argv) {
			return arg[j], argv[i+1], true
		}
		return arg[j], "", false
	}
	return 0, "", false
}

// gitConfig reads git config: setting a key (in any syntax: git config
// KEY VALUE, git config set KEY VALUE, with --file/-f/--global/...)
// changes what every later git command does.
func (a *Analysis) gitConfig(args []string, add func(string), config func(how, key, value string), addFinding func(string, string, string, float64)) {
	var words []string
	reading := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-f" || arg == "--file" || arg == "--blob" || arg == "--type" || arg == "--default" || arg == "--comment" || arg == "--value":
			if arg == "-f" || arg == "--file" {
				if i+1 < len(args) {
					add("git config writes " + args[i+1])
				}
			}
			i++
		case strings.HasPrefix(arg, "--get") || arg == "--list" || arg == "-l" || arg == "--unset" || arg == "--unset-all" || arg == "--show-origin":
			reading = true
		case strings.HasPrefix(arg, "-"):
		default:
			words = append(words, arg)
		}
	}
	if len(words) > 0 && (words[0] == "get" || words[0] == "list" || words[0] == "unset") {
		return
	}
	if len(words) > 0 && words[0] == "set" {
		words = words[1:]
	}
	if reading || len(words) < 2 {
		return
	}
	key, value := words[0], strings.Join(words[1:], " ")
	config("git config", key, value)
	if cmd := gitRuns(key, value); cmd != "" {
		addFinding(FindPersistence, key, "git config "+key+" makes git run "+cmd+" later", 0.6)
	}
}

// gitWrites records a file git writes (--output, archive -o, checkout --
// PATH): it is a write like any other, so what is written there is judged.
func (a *Analysis) gitWrites(p, dir string) {
	if p == "" || p == "-" || strings.HasPrefix(p, "-") {
		return
	}
	a.Paths = append(a.Paths, resolve(p, dir))
	a.WritePaths = append(a.WritePaths, resolve(p, dir))
}

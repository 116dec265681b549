package action

import (
	"regexp"
	"slices"
	"strings"
)

// Destruction beyond a recursive delete: work not yet committed or pushed
// thrown away, credential and configuration directories taken away, and
// infrastructure and data torn down through the tools made for it. Each
// is often what a person meant, sometimes not: the policy asks (a
// confidence under the balanced threshold), and a strict manifest denies.

// Finding classes.
const (
	// FindDiscardWork: uncommitted or unpushed work thrown away — a hard
	// reset, a checkout or restore over changed files, a forced clean,
	// stashes dropped, a branch force-deleted.
	FindDiscardWork = "discard_work"
	// FindTeardown: infrastructure or data destroyed through its usual
	// tools — infrastructure-as-code destroy, cluster namespaces and
	// --all deletes, chart uninstalls, recursive object-store deletes and
	// bucket removal, container volume and system prunes, tables dropped
	// or emptied, caches flushed, document stores dropped.
	FindTeardown = "teardown"
)

// discardsWork finds git commands that throw away work not yet kept.
func discardsWork(c Command, add func(string, string, string, float64)) {
	if c.Binary != "git" {
		return
	}
	sub, args := gitSub(c.Argv)
	line := strings.Join(c.Argv, " ")
	has := func(flags ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(flags, a) })
	}
	short := func(f rune) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsRune(a, f)
		})
	}
	ops := operands(append([]string{"git"}, args...))
	switch sub {
	case "reset":
		if has("--hard", "--merge") {
			add(FindDiscardWork, line, "git reset "+args[slices.IndexFunc(args, func(a string) bool { return a == "--hard" || a == "--merge" })]+" discards uncommitted changes", 0.6)
		}
	case "checkout":
		// Over paths (git checkout -- FILE, git checkout .), or forced.
		if has("-f", "--force") || slices.Contains(args, "--") && len(ops) > 0 || slices.Contains(ops, ".") || has("-p", "--patch") {
			add(FindDiscardWork, line, "git checkout over files discards their uncommitted changes", 0.6)
		}
	case "switch":
		if has("--discard-changes", "-f", "--force") {
			add(FindDiscardWork, line, "git switch --discard-changes throws uncommitted changes away", 0.6)
		}
	case "read-tree":
		if has("--reset") || has("-u") && has("-m") {
			add(FindDiscardWork, line, "git read-tree -u --reset overwrites the work tree's changes", 0.6)
		}
	case "checkout-index":
		if has("-f", "--force") {
			add(FindDiscardWork, line, "git checkout-index -f overwrites changed files", 0.6)
		}
	case "filter-branch", "filter-repo":
		add(FindDiscardWork, line, "git "+sub+" rewrites every commit of history", 0.6)
	case "restore":
		staged, worktree := has("--staged", "-S"), has("--worktree", "-W")
		if (!staged || worktree) && len(ops) > 0 {
			add(FindDiscardWork, line, "git restore discards the uncommitted changes of the files it restores", 0.6)
		}
	case "clean":
		if (short('f') || has("--force")) && !(short('n') || has("--dry-run")) {
			add(FindDiscardWork, line, "git clean -f deletes untracked files, which no commit keeps", 0.6)
		}
	case "stash":
		if len(ops) > 0 && (ops[0] == "drop" || ops[0] == "clear") {
			add(FindDiscardWork, line, "git stash "+ops[0]+" throws stashed changes away", 0.6)
		}
	case "branch":
		if has("-D") || (has("-d", "--delete") && has("-f", "--force")) || slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'D')
		}) {
			add(FindDiscardWork, line, "git branch -D deletes a branch whether or not it was merged", 0.6)
		}
	case "worktree":
		if len(ops) > 0 && ops[0] == "remove" && has("-f", "--force") {
			add(FindDiscardWork, line, "git worktree remove --force discards the work tree's changes", 0.6)
		}
	case "update-ref":
		if has("-d") {
			add(FindDiscardWork, line, "git update-ref -d deletes a ref", 0.6)
		}
	case "reflog":
		if len(ops) > 0 && (ops[0] == "expire" || ops[0] == "delete") {
			add(FindDiscardWork, line, "git reflog "+ops[0]+" removes the record that recovers lost commits", 0.6)
		}
	case "gc":
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--prune=now") }) || has("--prune", "now") {
			add(FindDiscardWork, line, "git gc --prune=now deletes unreachable commits for good", 0.6)
		}
	}
}

// configDirs are per-user directories whose loss takes credentials or a
// machine's configuration with it (the directory itself: a file in one,
// known_hosts.old, is no loss unless it holds credentials).
var configDirs = regexp.MustCompile(`^(?:~|\$HOME|\$\{HOME\}|/home/[^/]+|/Users/[^/]+|/root)/(?:\.ssh|\.aws|\.gnupg|\.kube|\.docker|\.config|\.azure|\.password-store|\.local/share/keyrings|\.terraform\.d|Library/Keychains)$`)

// removers delete, empty, shred or move away what they name.
var removers = map[string]bool{"rm": true, "shred": true, "truncate": true, "mv": true, "unlink": true, "rmdir": true, "srm": true, "wipe": true}

// takesConfig finds a credential or configuration directory (or a file
// directly in one) deleted, emptied, shredded or moved away.
func takesConfig(c Command, add func(string, string, string, float64)) {
	if !removers[c.Binary] {
		return
	}
	ops := operands(c.Argv)
	if c.Binary == "mv" && len(ops) > 1 {
		ops = ops[:len(ops)-1] // what it moves away, not where
	}
	for _, t := range ops {
		t := strings.TrimRight(t, "/")
		if configDirs.MatchString(t) || homePrefix.MatchString(t) && secretStore(t) {
			add(FindDestructive, t, c.Binary+" takes away "+t+", which holds credentials or configuration", 0.8)
		}
	}
}

// teardownSQL is SQL that destroys a table, a database or every row.
var teardownSQL = regexp.MustCompile(`(?i)\b(?:drop\s+(?:table|database|schema|keyspace|collection|index)|truncate\s+(?:table\s+)?\w|delete\s+from\s+[\w."]+\s*(?:;|$|'|")|update\s+[\w."]+\s+set\s+[^;'"]*?(?:;|$|'|"))|\bflushall\b|\bflushdb\b|dropDatabase\s*\(|\.drop\s*\(\s*\)|deleteMany\s*\(\s*\{\s*\}\s*\)|\bdeleteMany\s*\(\s*\)`)

// frameworkTeardown matches application frameworks' commands that drop or
// empty the database.
var frameworkTeardown = regexp.MustCompile(`\bmanage\.py\s+(?:flush|reset_db|sqlflush)\b|\b(?:rails|rake)\s+db:(?:drop|reset|purge|schema:load)\b|\bprisma\s+(?:migrate\s+reset|db\s+push\s+--force-reset)\b|\bartisan\s+(?:migrate:fresh|migrate:reset|db:wipe)\b|\bflask\s+db\s+downgrade\s+base\b|\bsequelize\s+db:drop\b|\bknex\s+migrate:rollback\s+--all\b`)

// teardown finds infrastructure and data destroyed through its tools.
func teardown(c Command, add func(string, string, string, float64)) {
	line := strings.Join(c.Argv, " ")
	args := c.Argv[1:]
	has := func(w ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(w, a) })
	}
	at := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	found := func(why string) { add(FindTeardown, line, why, 0.6) }
	switch c.Binary {
	case "terraform", "tofu", "terragrunt":
		if has("destroy") || has("apply") && has("-destroy") || has("state") && has("rm") {
			found(c.Binary + " destroys the infrastructure it manages")
		}
	case "pulumi", "cdk", "sst", "serverless", "sls":
		if has("destroy", "remove") {
			found(c.Binary + " destroys the stack it manages")
		}
	case "kubectl", "oc":
		if has("drain") || has("scale") && slices.ContainsFunc(args, func(a string) bool { return a == "--replicas=0" }) ||
			has("delete") && has("-f", "-k", "--filename", "--kustomize") {
			found(c.Binary + " takes workloads down (drain, scale to zero, delete what a manifest declares)")
		}
		if has("delete") && (has("namespace", "ns", "namespaces", "--all", "-A", "--all-namespaces", "pv", "pvc", "persistentvolume", "persistentvolumeclaim", "node", "crd") ||
			slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "namespace/") || strings.HasPrefix(a, "ns/") })) {
			found(c.Binary + " deletes a namespace or every resource of a kind")
		}
	case "helm":
		if has("uninstall", "delete", "del", "un") {
			found("helm uninstalls a release and what it deployed")
		}
	case "heroku", "fly", "flyctl", "vercel", "netlify", "railway", "render":
		if slices.ContainsFunc(args, func(a string) bool {
			return strings.HasSuffix(a, ":destroy") || a == "destroy" || a == "remove" || a == "rm" || a == "delete"
		}) {
			found(c.Binary + " destroys an application or its resources")
		}
	case "doctl", "firebase", "consul", "vault", "influx", "linode-cli", "hcloud", "oci", "ibmcloud", "scw", "supabase", "neonctl", "planetscale", "pscale", "turso", "upstash", "wrangler", "fastly", "ansible-playbook":
		if slices.ContainsFunc(args, func(a string) bool {
			a = strings.ToLower(a)
			return a == "delete" || a == "destroy" || a == "disable" || a == "remove" || a == "rm" || a == "purge" || strings.HasSuffix(a, ":delete") ||
				strings.HasSuffix(a, ":destroy") || a == "drop" || a == "reset"
		}) {
			found(c.Binary + " deletes or disables cloud resources")
		}
	case "etcdctl":
		if has("del", "delete") && has("--prefix", "--from-key") {
			found("etcdctl deletes every key under a prefix")
		}
	case "gh", "glab":
		if at(1) == "delete" && (at(0) == "repo" || at(0) == "release" || at(0) == "project") ||
			at(0) == "api" && (has("-X", "--method") && slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "DELETE") }) ||
				slices.ContainsFunc(args, func(a string) bool {
					return strings.EqualFold(a, "-XDELETE") || strings.EqualFold(a, "--method=DELETE")
				})) {
			found(c.Binary + " deletes a repository or its resources")
		}
	case "mysqladmin":
		if has("drop") {
			found("mysqladmin drops a database")
		}
	case "dropdb", "dropuser":
		found(c.Binary + " drops a database")
	case "aws":
		if strings.HasPrefix(at(1), "delete-") || strings.HasPrefix(at(1), "batch-delete") || at(1) == "purge-queue" {
			found("aws deletes " + at(0) + " resources")
		}
		if at(0) == "s3" && (at(1) == "rm" && has("--recursive") || at(1) == "rb") || at(0) == "s3api" && (at(1) == "delete-bucket" || at(1) == "delete-objects") ||
			strings.HasPrefix(at(1), "delete-") && (at(0) == "rds" || at(0) == "dynamodb" || at(0) == "ec2" && strings.Contains(at(1), "volume") || at(0) == "cloudformation") ||
			at(0) == "ec2" && at(1) == "terminate-instances" {
			found("aws deletes storage, databases or instances")
		}
	case "gsutil":
		if has("rb") || has("rm") && slices.ContainsFunc(args, func(a string) bool {
			return a == "-r" || a == "-R" || strings.HasPrefix(a, "-") && strings.ContainsAny(a, "rR")
		}) {
			found("gsutil deletes a bucket or its objects")
		}
	case "gcloud":
		if has("delete") && (has("instances", "sql", "clusters", "projects", "buckets") || has("storage") && has("rm")) || has("storage") && has("rm") && has("-r", "--recursive") {
			found("gcloud deletes cloud resources")
		}
	case "az":
		if has("delete") && has("group", "vm", "storage", "sql", "aks", "cosmosdb") {
			found("az deletes cloud resources")
		}
	case "docker", "podman":
		if (at(0) == "rm" || at(0) == "rmi") && has("-f", "--force") && slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "$(") }) ||
			at(0) == "system" && has("reset") {
			found(c.Binary + " removes every container or image")
		}
		if has("prune") && (has("system", "volume") || at(0) == "volume") || at(0) == "volume" && has("rm") {
			found(c.Binary + " prune deletes stopped containers, unused images and networks, and volumes where it says so, with the data in them")
		}
	case "docker-compose":
		if has("down") && has("-v", "--volumes") {
			found("docker-compose down -v deletes the project's volumes")
		}
	case "redis-cli":
		if has("FLUSHALL", "flushall", "FLUSHDB", "flushdb") {
			found("redis-cli empties the cache or database")
		}
	}
	if c.Binary == "docker" && at(0) == "compose" && has("down") && has("-v", "--volumes") {
		found("docker compose down -v deletes the project's volumes")
	}
	if holdsAny(line, frameworkWords...) {
		if m := frameworkTeardown.FindString(line); m != "" {
			found(m + " drops or empties the application's database")
		}
	}
	if dbClients[c.Binary] || c.Binary == "redis-cli" || c.Binary == "mongosh" || c.Binary == "mongo" {
		text := strings.Join(args, " ") + "\n" + c.Heredoc
		if m := teardownSQL.FindString(text); m != "" {
			found(c.Binary + " runs " + m + ", which destroys data")
		}
	}
}

// frameworkWords are the frameworks frameworkTeardown knows.
var frameworkWords = []string{"manage.py", "rails", "rake", "prisma", "artisan", "flask", "sequelize", "knex"}

package action

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Shapes: what a call does, read from the shape of its words rather than
// from the program's name. A command line carried in an argument, an
// environment value or a file the same line writes and then hands to a
// program runs; a network endpoint with a shell in one call is a remote
// shell; a program the analysis does not know given a network endpoint
// sends to it; a shared library handed to a program is loaded into it.

// FindLibraryLoad: a program made to load a shared library (a .so or
// .dylib named to it, dlopen in inline code, LD_PRELOAD): code the
// analysis cannot read runs inside it.
const FindLibraryLoad = "library_load"

// commandWords are programs whose appearance at the start of a word
// sequence carried by another program's argument, environment value or
// input is read as a command line.
var commandWords = map[string]bool{"rm": true, "sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "nc": true, "ncat": true,
	"netcat": true, "socat": true, "curl": true, "wget": true, "python": true, "python3": true, "perl": true, "ruby": true, "php": true,
	"node": true, "chmod": true, "dd": true, "shred": true, "mkfs": true, "kill": true, "pkill": true, "killall": true, "exec": true,
	"eval": true, "/bin/sh": true, "/bin/bash": true, "find": true, "git": true, "crontab": true, "scp": true, "rsync": true,
	"busybox": true, "mv": true, "cp": true, "tee": true, "truncate": true, "engine": true, "ledger": true}

// commandVars are environment variables whose value is a command line a
// program runs.
var commandVars = map[string]bool{"LESSOPEN": true, "LESSCLOSE": true, "GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_ASKPASS": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "BROWSER": true, "VISUAL": true, "MANPAGER": true, "PROMPT_COMMAND": true}

// embeddedCommand finds command lines inside free text: a command word at
// a token boundary and what follows it up to the end of the clause.
var embeddedCommand = regexp.MustCompile("(?:^|[\\s(;|&'\"`{=:,])((?:/bin/)?(?:rm|sh|bash|dash|zsh|nc|ncat|netcat|socat|curl|wget|python3?|perl|ruby|php|node|chmod|dd|shred|pkill|killall|exec|crontab|busybox)\\s[^\\n)\"'`;|&}]*)")

// argumentCommands reads the command lines other programs carry: the
// values of environment assignments (LESSOPEN='…', GIT_SSH_COMMAND=…),
// and, for programs the analysis does not know, every argument — a word
// that is itself a command line ('/bin/sh -i'), an option value that
// starts one (ssh_command=rm …, --password-command='…'), or the rest of
// the arguments from a command word on (-z rm -rf ~). What they run is
// judged as if written on the line.
func (a *Analysis) argumentCommands(cwd string) {
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		if len(c.Via) > 3 {
			continue
		}
		dir := cmp.Or(c.Dir, cwd)
		a.optionCommands(c, dir)
		via := append(clone(c.Via), c.Binary+" argument")
		for _, e := range c.Env {
			n, v, ok := strings.Cut(e, "=")
			switch {
			case !ok:
			case commandVars[n] || strings.HasSuffix(n, "_COMMAND") || strings.HasSuffix(n, "_CMD") || strings.HasSuffix(n, "PAGER") || strings.HasSuffix(n, "EDITOR"):
				if len(a.Commands) < 256 {
					a.addShell(v, dir, 2) // GIT_PAGER='sh -c "…"' git log: what git runs
				}
			case strings.ContainsAny(v, " \t"):
				a.embedded(v, dir, append(clone(c.Via), c.Binary+" environment"))
			}
		}
		if !a.unknownProgram(c) {
			continue
		}
		for j := 1; j < len(c.Argv); j++ {
			w := c.Argv[j]
			_, v, hasValue := strings.Cut(w, "=")
			switch {
			case commandWords[w] && j+1 < len(c.Argv):
				a.addSub(c.Argv[j:], via, dir) // -z rm -rf ~
				j = len(c.Argv)
			case hasValue && commandWords[base(v)] && j+1 < len(c.Argv) && !strings.ContainsAny(v, " \t"):
				a.addSub(append([]string{v}, c.Argv[j+1:]...), via, dir) // ssh_command=rm -rf ~
				j = len(c.Argv)
			case strings.ContainsAny(w, " \t\n"):
				a.embedded(w, dir, via)
			}
		}
		if c.Heredoc != "" && !shells[c.Binary] {
			a.embedded(c.Heredoc, dir, append(clone(c.Via), c.Binary+" input"))
		}
		// Text an echo or printf pipes into it is its input (m4, a
		// REPL): the commands in it run.
		if c.Piped && i > 0 {
			if p := a.Commands[i-1]; p.Stage == c.Stage-1 && (p.Binary == "echo" || p.Binary == "printf") {
				a.embedded(unescapePrintf(printed(p.Argv)), dir, append(clone(c.Via), c.Binary+" input"))
			}
		}
	}
}

// unknownProgram reports whether c is a program whose handling of its
// arguments the analysis does not read: not a builtin, not known, not an
// interpreter or a shell (whose code is read as code).
func (a *Analysis) unknownProgram(c Command) bool {
	return !IsShellBuiltin(c.Binary) && !knownPrograms[c.Binary] && !ReadsOnly(c) && !shells[c.Binary] &&
		interpreterLang(c.Binary) == "" && !strings.HasPrefix(c.Binary, "$") && c.Binary != "eval"
}

// embedded reads the command lines inside text (code, a configuration
// line, a value) as commands run via via.
func (a *Analysis) embedded(text, dir string, via []string) {
	if len(text) > maxContent {
		text = text[:maxContent]
	}
	for _, m := range embeddedCommand.FindAllStringSubmatch(text, 8) {
		if len(a.Commands) >= 256 {
			return
		}
		parseShell(strings.TrimSpace(m[1]), via, 2, &a.Commands)
	}
}

// usedContent reads what a line writes into a file (echo, printf or a
// here-document redirected to it) and then hands to a later command of
// the same line — runs it, makes it executable, or names it to a program
// the analysis does not know (aria2c --on-download-error=FILE, nginx -c
// FILE, go run FILE): the text is code, read for the commands it carries,
// the protected paths it may write and the remote shell it may be.
func (a *Analysis) usedContent(cwd string) {
	for i, c := range a.Commands {
		text := writtenBy(c)
		if text == "" || len(c.Redirects) == 0 {
			continue
		}
		if c.Binary == "echo" && slices.Contains(c.Argv, "-e") {
			text = unescapePrintf(text)
		}
		dir := cmp.Or(c.Dir, cwd)
		for _, r := range c.Redirects {
			p := resolve(r, dir)
			if !a.namedLater(p, i, dir) {
				continue
			}
			via := []string{"written to " + p}
			a.embedded(text, dir, via)
			for _, q := range WordPaths(text) {
				a.named(resolve(q, dir), true)
			}
			a.codeShapes(text, strings.Join(via, " "))
		}
	}
}

// namedLater reports whether a command after a.Commands[i] names p.
func (a *Analysis) namedLater(p string, i int, dir string) bool {
	for _, c := range a.Commands[i+1:] {
		for _, w := range c.Argv {
			for _, q := range append(WordPaths(w), w) {
				if resolve(q, cmp.Or(c.Dir, dir)) == p {
					return true
				}
			}
		}
	}
	return false
}

// Remote shells by shape.

// ipLiteral matches an IPv4 address.
var ipLiteral = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)

// shellMarker is a shell handed to someone: a shell program named as a
// word, an interactive shell, a shell whose streams are a descriptor
// held in a variable, a process started from what was read.
var shellMarker = regexp.MustCompile(`proc_open\s*\(\s*["'](?:/bin/)?(?:ba|z)?sh|(?:^|[\s'"(\[=,])(?:/bin/|/usr/bin/)?(?:ba|z|da|k|c|tc)?sh(?:\s+-i)?(?:["'\s)\],]|$)|\bcmd\.exe\b|\bexec\s+\$|ProcessBuilder\s*\(|pty\.spawn|\bspawn\s*\(\s*["'](?:/bin/)?(?:ba|z)?sh|\bio\.popen|\bos\.execute|\bsystem\s*\(|\bexec\s*\(|\brun\s*\(\s*` + "`" + `|\|&\s*getline|[0-2]?>&\s*\$`)

// netMarker is code or text that opens a connection or listens.
var netMarker = regexp.MustCompile(`/inet/tcp/|/dev/tcp/|/dev/udp/|\bsocket\b|Socket\b|fsockopen|\bconnect\s*\(|\bztcp\b|createServer|\.listen\s*\(|\bbind\s*\(|\baccept\s*\(|TCPServer|TCPSocket|\bSockets\b`)

// remoteShellShapes finds a network endpoint and a shell in one command
// (its arguments, its inline code) or in one line of text handed to an
// interactive program (tclsh, jjs, a REPL reading the lines after it).
func (a *Analysis) remoteShellShapes(lines []string) {
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		if remoteRunners[c.Binary] {
			continue // ssh HOST /bin/sh runs a shell there, by design
		}
		text := strings.Join(c.Argv[1:], " ")
		if code, _ := inlineCode(c); code != "" {
			text += "\n" + code
		} else if c.Heredoc != "" {
			text += "\n" + c.Heredoc
		}
		endpoint := hasEndpoint(c.Argv[1:]) || holdsAny(text, netWords...) && netMarker.MatchString(text) ||
			a.unknownProgram(c) && slices.ContainsFunc(operands(c.Argv), func(w string) bool { return isDigits(w) && len(w) >= 2 && len(w) <= 5 })
		if endpoint && holdsAny(text, shellWords...) && shellMarker.MatchString(text) {
			a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), c.Binary+" ties a shell to a network endpoint", 0.8)
		}
	}
	if slices.ContainsFunc(a.Commands, func(c Command) bool { return remoteRunners[c.Binary] }) {
		return
	}
	for _, line := range lines {
		if strings.Contains(line, "\n") {
			// Lines after an interactive program's name are its input
			// (tclsh, jjs, a REPL): read the whole as code.
			a.codeShapes(line, "the command line")
		}
	}
}

// codeShapes judges text that is code (a line, a file the line writes and
// runs) for a remote shell: an endpoint named outright (an address, a
// socket device) and a shell in one text.
func (a *Analysis) codeShapes(text, where string) {
	if len(text) > maxContent {
		text = text[:maxContent]
	}
	if !strings.Contains(text, "://") && !(holdsAny(text, netWords...) && netMarker.MatchString(text)) && !hasPublicIP(text) && !(holdsAny(text, connectWords...) && socketCode.MatchString(text)) {
		return
	}
	if (hasPublicIP(text) || strings.Contains(text, "/inet/") || strings.Contains(text, "/dev/tcp/") || strings.Contains(text, "Socket")) &&
		shellMarker.MatchString(text) {
		a.addFinding(FindRemoteShell, where, where+" opens a connection and runs a shell", 0.6)
	}
	for _, p := range embeddedProtected(text) {
		if secretStore(p) || credentialDir.MatchString(p) {
			a.addFinding(FindExfiltration, p, where+" names "+p+" and reaches the network", 0.8)
			break
		}
	}
}

// netWords are words netMarker needs, one of which text must hold before the expression is tried (most commands hold none).
var netWords = []string{"/inet/", "/dev/tcp", "/dev/udp", "socket", "Socket", "connect", "ztcp", "createServer", "listen", "bind", "accept", "TCP", "fsockopen"}

// shellWords are words shellMarker needs.
var shellWords = []string{"sh", "cmd.exe", "exec", "ProcessBuilder", "spawn", "popen", "execute", "system", "run", "getline", ">&", "proc_open"}

// remoteRunners run commands on another machine by design.
var remoteRunners = map[string]bool{"ssh": true, "mosh": true, "docker": true, "podman": true, "kubectl": true, "gcloud": true,
	"aws": true, "az": true, "vagrant": true, "ansible": true}

// hasPublicIP reports whether text names a public IPv4 address: not this
// machine's, not unspecified, not in a private range (a developer's own
// network: a database, a build box).
func hasPublicIP(text string) bool {
	if strings.Count(text, ".") < 3 || strings.IndexAny(text, "0123456789") < 0 {
		return false
	}
	for _, ip := range ipLiteral.FindAllString(text, 8) {
		if publicIP(ip) && !versionLike(text, ip) {
			return true
		}
	}
	return false
}

// publicIP reports whether an IPv4 literal is a public address.
func publicIP(ip string) bool {
	if Loopback(ip) || strings.HasPrefix(ip, "0.") || strings.HasPrefix(ip, "10.") || strings.HasPrefix(ip, "192.168.") ||
		strings.HasPrefix(ip, "169.254.") || strings.HasPrefix(ip, "255.") {
		return false
	}
	for n := 16; n <= 31; n++ {
		if strings.HasPrefix(ip, "172."+strconv.Itoa(n)+".") {
			return false
		}
	}
	return true
}

// versionLike reports whether ip in text is part of a version (v1.2.3.4,
// 1.2.3.4-beta): not an address.
func versionLike(text, ip string) bool {
	i := strings.Index(text, ip)
	return i > 0 && (text[i-1] == 'v' || text[i-1] == '=') || strings.HasPrefix(text[i+len(ip):], "-")
}

// hasEndpoint reports whether words name a network endpoint outright: a
// public address, host:port, a port given with -p/--port or alone as a
// listening port with -l.
func hasEndpoint(words []string) bool {
	for i, w := range words {
		switch {
		case hasPublicIP(w):
			return true
		case (w == "-l" || w == "--listen" || strings.HasPrefix(w, "--listen=") || w == "-p" || w == "--port") && i+1 < len(words) && isDigits(words[i+1]):
			return true
		case strings.HasPrefix(w, "--listen=") || strings.HasPrefix(w, "--port="):
			return true
		case len(w) > 2 && len(w) <= 5 && (w[0] == '-' && w[1] != '-') && strings.ContainsRune(w[1:], 'p') && i+1 < len(words) && isDigits(words[i+1]) && len(words[i+1]) >= 2:
			return true // -svp 12345
		}
	}
	return false
}

// Sends to endpoints the analysis cannot read.

// fileServers serve a directory to whoever connects.
var fileServers = regexp.MustCompile(`(?:^|\s)(?:-m\s+(?:http\.server|SimpleHTTPServer)|-run\s+-e\s+httpd|-S\s+\S+:\d+|httpd\s|proxy\s.*--www=)|(?:http\.server|SimpleHTTPServer|socketserver|SocketServer)[\s\S]*serve_forever`)

// serveWords are words fileServers needs.
var serveWords = []string{"http.server", "SimpleHTTPServer", "httpd", "-S ", "--www=", "serve_forever"}

// oddSchemes are URL schemes that carry data in the request itself.
var oddSchemes = []string{"gopher://", "dict://", "telnet://", "ldap://", "tftp://", "smb://", "ftp://"}

// endpointSends finds data leaving by routes a name does not give away:
// a program the analysis does not know given a public address or
// host:port; a server that serves files on every interface; a URL whose
// scheme carries data; a tunnel that opens the machine to the internet.
func (a *Analysis) endpointSends() {
	add := func(why string) {
		if !slices.Contains(a.Sends, why) {
			a.Sends = append(a.Sends, why)
		}
	}
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		line := strings.Join(c.Argv, " ")
		if a.unknownProgram(c) {
			for _, w := range c.Argv[1:] {
				for _, ip := range ipLiteral.FindAllString(w, 2) {
					if publicIP(ip) && !versionLike(w, ip) {
						add(c.Binary + " reaches " + ip + ", and the analysis does not know what it sends")
						a.Hosts = append(a.Hosts, ip)
					}
				}
			}
		}
		if holdsAny(line, serveWords...) && fileServers.MatchString(line) && !slices.ContainsFunc(c.Argv, func(w string) bool {
			return strings.HasPrefix(w, "127.") || w == "::1" || strings.Contains(w, "localhost") || strings.HasPrefix(w, "--bind=127.")
		}) {
			add(c.Binary + " serves files to the network")
		}
		for _, w := range c.Argv[1:] {
			for _, s := range oddSchemes {
				if strings.HasPrefix(strings.ToLower(w), s) {
					add(c.Binary + " sends data in a " + strings.TrimSuffix(s, "://") + " request")
				}
			}
		}
		if code, _ := inlineCode(c); code != "" && holdsAny(code, serveWords...) && fileServers.MatchString(code) {
			add(c.Binary + " serves files to the network")
		}
		if a.unknownProgram(c) && slices.ContainsFunc(c.Argv[1:], func(w string) bool { return w == "--listen" || strings.HasPrefix(w, "--listen=") }) {
			add(c.Binary + " listens for connections, and the analysis does not know what it serves")
		}
		if (c.Binary == "jupyter" || c.Binary == "jupyter-notebook" || c.Binary == "jupyter-lab") && slices.ContainsFunc(c.Argv, func(w string) bool {
			return strings.Contains(w, "0.0.0.0") || strings.Contains(w, "*")
		}) {
			add(c.Binary + " serves a notebook (code execution) to the network")
		}
		if c.Binary == "socat" && slices.ContainsFunc(c.Argv[1:], func(w string) bool { return strings.Contains(strings.ToUpper(w), "-LISTEN:") }) {
			add("socat listens for connections and relays them")
		}
		if c.Binary == "ssh" && slices.ContainsFunc(c.Argv[1:], func(w string) bool {
			return w == "-R" || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.ContainsRune(w, 'R') && len(w) <= 6
		}) {
			add("ssh -R opens a port of another machine into this one")
		}
		if (c.Binary == "xterm" || c.Binary == "xdotool") && slices.ContainsFunc(c.Argv[1:], func(w string) bool { return w == "-display" }) {
			a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), c.Binary+" opens a terminal on another machine's display", 0.8)
		}
		if tunnel(c) {
			add(c.Binary + " opens a tunnel from the internet to this machine")
		}
	}
}

// tunnel reports whether c opens a tunnel to this machine.
func tunnel(c Command) bool {
	sub := ""
	if len(c.Argv) > 1 {
		sub = c.Argv[1]
	}
	switch c.Binary {
	case "ngrok", "tmate", "bore", "localtunnel", "lt", "frpc", "chisel":
		return true
	case "code", "code-insiders", "cloudflared":
		return sub == "tunnel"
	}
	return false
}

// Libraries.

// sharedLibrary matches a shared library's file name.
var sharedLibrary = regexp.MustCompile(`\.so(?:\.[0-9a-z.]+)?$|\.dylib$`)

// loaderVars make every program started with them load code first.
var loaderVars = map[string]bool{"LD_PRELOAD": true, "LD_AUDIT": true, "LD_LIBRARY_PATH": true, "DYLD_INSERT_LIBRARIES": true,
	"DYLD_LIBRARY_PATH": true, "BASH_ENV": true, "ENV": true, "PYTHONSTARTUP": true}

// codeOption matches an interpreter option that loads a file first
// (node --require FILE, ruby -rFILE, perl -MFILE).
var codeOption = regexp.MustCompile(`(?:^|\s)(?:--require|-r|--import|--loader|--experimental-loader|-M)[\s=]?\S`)

// libraryCode is code that loads a library.
var libraryCode = regexp.MustCompile(`\bdlopen\b|LoadLibrary|\bcdll\b|ctypes\.CDLL|Fiddle|\bload_module\b|\benable\s+-f\b|^\s*load\s+\S+\.so|DynaLoader|ffi\.load|System\.load|package\.loadlib`)

// loadWords are words libraryCode needs.
var loadWords = []string{"dlopen", "LoadLibrary", "cdll", "CDLL", "Fiddle", "load_module", "enable", "load ", "DynaLoader", "ffi", "System.load", "loadlib"}

// libraryHandlers build, inspect, copy or remove libraries without
// loading them.
var libraryHandlers = map[string]bool{"cp": true, "mv": true, "rm": true, "ls": true, "ln": true, "install": true, "chmod": true,
	"ldd": true, "nm": true, "readelf": true, "objdump": true, "file": true, "strip": true, "strings": true, "gcc": true, "cc": true,
	"clang": true, "g++": true, "clang++": true, "ld": true, "go": true, "cargo": true, "rustc": true, "tar": true, "zip": true,
	"unzip": true, "sha256sum": true, "md5sum": true, "patchelf": true, "otool": true, "cat": true, "stat": true, "du": true, "find": true,
	"make": true, "cmake": true, "ninja": true, "git": true, "echo": true, "printf": true}

// libraryLoads finds programs made to load a shared library.
func (a *Analysis) libraryLoads() {
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		env := c.Env
		if c.Binary == "export" || c.Binary == "declare" || c.Binary == "typeset" {
			env = append(slices.Clone(env), c.Argv[1:]...) // export LD_AUDIT=…; ls
		}
		for _, e := range env {
			if n, v, _ := strings.Cut(e, "="); loaderVars[n] && v != "" || (n == "NODE_OPTIONS" || n == "RUBYOPT" || n == "PERL5OPT") && codeOption.MatchString(v) {
				a.addFinding(FindLibraryLoad, v, c.Binary+" runs with "+n+"="+v+", which loads code into it", 0.6)
			}
		}
		if c.Binary == "insmod" || c.Binary == "modprobe" && !slices.Contains(c.Argv, "-r") || c.Binary == "kextload" || c.Binary == "kmutil" && slices.Contains(c.Argv, "load") {
			a.addFinding(FindLibraryLoad, strings.Join(c.Argv, " "), c.Binary+" loads code into the kernel", 0.8)
		}
		if c.Binary == "ldconfig" && slices.ContainsFunc(c.Argv[1:], func(w string) bool { return w != "-p" && w != "--print-cache" }) {
			a.addFinding(FindLibraryLoad, strings.Join(c.Argv, " "), "ldconfig changes where every program finds its libraries", 0.6)
		}
		code, _ := inlineCode(c)
		if code == "" {
			code = c.Heredoc
		}
		if text := strings.Join(c.Argv[1:], " ") + "\n" + code; holdsAny(text, loadWords...) && libraryCode.MatchString(text) {
			a.addFinding(FindLibraryLoad, strings.Join(c.Argv, " "), c.Binary+" loads a library", 0.6)
			continue
		}
		if libraryHandlers[c.Binary] || ReadsOnly(c) {
			continue
		}
		for _, w := range c.Argv[1:] {
			if _, v, ok := strings.Cut(w, "="); ok {
				w = v
			}
			if (strings.Contains(w, ".so") || strings.Contains(w, ".dylib")) && sharedLibrary.MatchString(w) && !outputOption(w) {
				a.addFinding(FindLibraryLoad, w, c.Binary+" is handed "+w+", a shared library it may load", 0.6)
				break
			}
		}
	}
}

// Process memory.

// processMemory finds reads of another process's memory (its secrets
// included): core dumps of a running process, /proc/PID/mem.
func (a *Analysis) processMemory() {
	for _, c := range a.Commands {
		switch {
		case c.Binary == "gcore",
			(c.Binary == "gdb" || c.Binary == "lldb") && slices.ContainsFunc(c.Argv, func(w string) bool { return w == "-p" || w == "--pid" || strings.HasPrefix(w, "--pid=") }):
			a.addFinding(FindSecretRead, c.Binary, c.Binary+" reads a running process's memory", 0.6)
		}
	}
	for _, p := range a.Paths {
		if strings.HasPrefix(p, "/proc/") && (strings.HasSuffix(p, "/mem") || strings.HasSuffix(p, "/maps")) {
			a.addFinding(FindSecretRead, p, p+" is a process's memory", 0.6)
		}
	}
}

// Opaque programs and targets.

// opaqueWord reports whether a word is completed at run time in a way the
// analysis cannot read: a variable the caller sets (not one of the
// caller's own well-known ones, $HOME, $TMPDIR, $PWD), a command
// substitution, a backquote.
func opaqueWord(w string) bool {
	if strings.ContainsAny(w, "`") || strings.Contains(w, "$(") {
		return true
	}
	for _, m := range shellVar.FindAllString(w, 4) {
		name := strings.Trim(strings.TrimPrefix(m, "$"), "{}")
		if !environmentVars[name] && !strings.HasPrefix(name, "XDG_") {
			return true
		}
	}
	return false
}

// opaque finds a call whose program or target only run time knows and
// that also does something that matters — a recursive delete, a protected
// path, a network endpoint: asked, never silently passed. A plain unknown
// program with ordinary arguments stays with the host's own prompt.
func (a *Analysis) opaque(c Command, cwd string, add func(string, string, string, float64)) {
	line := strings.Join(c.Argv, " ")
	matters := func(args []string) string {
		for _, w := range args {
			switch {
			case strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.ContainsAny(w, "rR") && len(w) <= 4 || w == "--recursive":
				return "deletes recursively"
			case dangerousTarget(w, cwd) != "" || len(embeddedProtected(w)) > 0 || secretStore(w) || persistencePath(w) != "":
				return "names " + w
			case strings.Contains(w, "://") || hasPublicIP(w):
				return "reaches " + w
			}
		}
		return ""
	}
	if opaqueWord(c.Argv[0]) {
		if why := matters(c.Argv[1:]); why != "" {
			add(FindOpaqueCode, line, "runs a program named only at run time ("+c.Argv[0]+") that "+why, 0.5)
		}
		return
	}
	if c.Binary == "rm" || c.Binary == "shred" || c.Binary == "find" && slices.Contains(c.Argv, "-delete") {
		recursive := c.Binary == "find" || matters(c.Argv[1:]) == "deletes recursively"
		for _, t := range operands(c.Argv) {
			if recursive && opaqueWord(t) {
				add(FindOpaqueCode, line, c.Binary+" deletes "+t+", a target only run time knows", 0.5)
				return
			}
		}
	}
}

// Programs that run a command line their options carry.

// optionCommands reads the command lines programs take in their options:
// ssh -o ProxyCommand=… (and LocalCommand), rsync -e/--rsh, zip -TT/
// --unzip-command, vim's -c/+ ':!CMD', sed's e command, the arguments an
// interpreter's inline code hands to system() ($ARGV, sys.argv,
// process.argv), and the command a container runs (docker run IMAGE CMD).
func (a *Analysis) optionCommands(c Command, dir string) {
	via := append(clone(c.Via), c.Binary+" option")
	run := func(line string) {
		if line = strings.TrimSpace(line); line != "" && len(a.Commands) < 256 {
			a.addShell(line, dir, 2)
		}
	}
	args := c.Argv[1:]
	value := func(i int, flag string) (string, bool) {
		w := args[i]
		if w == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(w, flag+"="); ok {
			return v, true
		}
		return "", false
	}
	for i, w := range args {
		switch c.Binary {
		case "ssh", "scp", "sftp", "autossh":
			v := ""
			if w == "-o" && i+1 < len(args) {
				v = args[i+1]
			} else if strings.HasPrefix(w, "-o") {
				v = w[2:]
			}
			if k, cmd, ok := strings.Cut(v, "="); ok && (strings.EqualFold(k, "ProxyCommand") || strings.EqualFold(k, "LocalCommand")) {
				run(cmd)
			}
		case "rsync":
			for _, f := range []string{"-e", "--rsh"} {
				if v, ok := value(i, f); ok {
					run(v)
				}
			}
		case "zip":
			for _, f := range []string{"-TT", "--unzip-command"} {
				if v, ok := value(i, f); ok {
					run(v)
				}
			}
		case "vim", "vi", "nvim", "ex", "view":
			v := ""
			if (w == "-c" || w == "--cmd") && i+1 < len(args) {
				v = args[i+1]
			} else if strings.HasPrefix(w, "+") {
				v = w[1:]
			}
			if cmd, ok := strings.CutPrefix(strings.TrimLeft(v, ": "), "!"); ok {
				run(cmd)
			}
		case "sed":
			for _, m := range sedExec.FindAllStringSubmatch(w, 4) {
				run(m[1])
			}
		}
	}
	if c.Binary == "git" {
		if sub, rest := gitSub(c.Argv); sub == "bisect" && len(rest) > 1 && rest[0] == "run" {
			a.addSub(rest[1:], via, dir) // git bisect run CMD…
		}
	}
	if (c.Binary == "sed" || c.Binary == "perl") && InPlace(c) {
		// sed -i '1i TEXT' FILE: what it inserts into an instruction file
		// is a memory write like any other.
		for _, f := range operands(c.Argv)[min(1, len(operands(c.Argv))):] {
			if InstructionFile(resolve(f, dir)) != "" {
				for _, m := range sedText.FindAllStringSubmatch(strings.Join(c.Argv[1:], "\n"), 4) {
					a.MemoryWrites = append(a.MemoryWrites, m[1])
				}
			}
		}
	}
	if code, lang := inlineCode(c); code != "" && lang != "awk" && argvCode.MatchString(code) && codeRunners.MatchString(code) {
		// perl -e 'system("sh", "-c", $ARGV[0])' 'CMD': the arguments after
		// the code are what it runs.
		ops := operands(c.Argv)
		for _, op := range ops {
			if op != code && strings.ContainsAny(op, " \t") {
				run(op)
			}
		}
	}
	if (c.Binary == "docker" || c.Binary == "podman" || c.Binary == "nerdctl") && len(args) > 0 && (args[0] == "run" || args[0] == "exec") {
		// What it runs there touches the container's files, not this
		// machine's; but a shell it hands to the network (with the host's
		// network, or published) is a remote shell all the same.
		if cmd := containerCommand(args); len(cmd) > 0 && len(a.Commands) < 256 {
			in := Analysis{Cwd: dir}
			parseShell(strings.Join(quoteAll(cmd), " "), via, 2, &in.Commands)
			in.remoteShells()
			in.remoteShellShapes(nil)
			for _, f := range in.Findings {
				a.addFinding(f.Class, f.Subject, c.Binary+" "+args[0]+": "+f.Detail, f.Confidence)
			}
			a.mounted(c, args, cmd, dir)
		}
	}
}

// sedText matches sed's i, a and c commands with the text they put in.
var sedText = regexp.MustCompile(`(?m)^(?:\d+|\$|/[^/]*/)?\s*[iac]\\?\s*(.+)$`)

// sedExec matches sed's e command (GNU sed runs its argument as a
// command): 1e CMD, $e CMD, /re/e CMD.
var sedExec = regexp.MustCompile(`(?:^|[;\n{}])\s*(?:\d+|\$|/[^/]*/)?\s*e\s+([^;\n}]+)`)

// argvCode is inline code that reads the arguments it was given.
var argvCode = regexp.MustCompile(`\$ARGV|@ARGV|sys\.argv|process\.argv|ARGV\[|\$argv|\$\*|"\$@"|\$1\b`)

// containerOptionValues are docker/podman run and exec options that take
// a value.
var containerOptionValues = map[string]bool{"-e": true, "--env": true, "-v": true, "--volume": true, "-p": true, "--publish": true,
	"--name": true, "-w": true, "--workdir": true, "-u": true, "--user": true, "--network": true, "--net": true, "--entrypoint": true,
	"-l": true, "--label": true, "--mount": true, "--env-file": true, "--platform": true, "-h": true, "--hostname": true, "--cap-add": true,
	"--device": true, "--pid": true, "--ipc": true, "--add-host": true, "--restart": true, "-m": true, "--memory": true, "--cpus": true}

// containerCommand is the command a docker run or exec runs: the words
// after the image (run) or the container (exec).
func containerCommand(args []string) []string {
	seen := 0
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if containerOptionValues[a] && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		seen++
		if seen == 1 {
			if i+1 < len(args) {
				return args[i+1:]
			}
			return nil
		}
	}
	return nil
}

// quoteAll quotes words so that a shell reads them back as they are.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}

// mounted judges what a container's command does to this machine's files
// through the directories mounted into it (docker run -v /home/dev:/h …
// rm -rf /h): the command is read with each mounted path written as the
// host path it is, and what it finds about those host paths — a delete, a
// secret read, a remote shell, a send — is the call's. What it does to the
// container's own files is not.
func (a *Analysis) mounted(c Command, args, cmd []string, dir string) {
	type mount struct{ src, dst string }
	var mounts []mount
	for i := 1; i < len(args); i++ {
		v := ""
		switch w := args[i]; {
		case (w == "-v" || w == "--volume") && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(w, "--volume="):
			v = strings.TrimPrefix(w, "--volume=")
		case (w == "--mount") && i+1 < len(args) || strings.HasPrefix(w, "--mount="):
			spec := strings.TrimPrefix(w, "--mount=")
			if w == "--mount" {
				spec = args[i+1]
			}
			var src, dst string
			for _, kv := range strings.Split(spec, ",") {
				k, val, _ := strings.Cut(kv, "=")
				switch k {
				case "source", "src":
					src = val
				case "target", "destination", "dst":
					dst = val
				}
			}
			if src != "" && dst != "" {
				v = src + ":" + dst
			}
		}
		if src, dst, ok := strings.Cut(v, ":"); ok && pathStart(src) && strings.HasPrefix(dst, "/") {
			dst, _, _ = strings.Cut(dst, ":") // :ro, :rw
			mounts = append(mounts, mount{resolve(src, dir), path.Clean(dst)})
		}
	}
	if len(mounts) == 0 {
		return
	}
	translated, hit := make([]string, len(cmd)), false
	for i, w := range cmd {
		translated[i] = w
		for _, m := range mounts {
			at := strings.Index(w, m.dst)
			if at < 0 {
				continue
			}
			rest := w[at+len(m.dst):]
			if rest != "" && rest[0] != '/' && rest[0] != ' ' && rest[0] != '\'' && rest[0] != '"' {
				continue // /hostname is not under /h
			}
			src := m.src
			if m.src == "/" && rest != "" {
				src = ""
			}
			translated[i] = w[:at] + src + rest
			hit = true
		}
	}
	line := strings.Join(quoteAll(translated), " ")
	if !hit || strings.Contains(line, "docker") || strings.Contains(line, "podman") {
		return
	}
	in := AnalyzeTool("Bash", map[string]any{"command": line}, dir)
	onHost := func(s string) bool {
		return slices.ContainsFunc(mounts, func(m mount) bool { return strings.Contains(s, m.src) })
	}
	for _, f := range in.Findings {
		if onHost(f.Subject) || onHost(f.Detail) {
			a.addFinding(f.Class, f.Subject, c.Binary+" "+args[0]+", through a mounted directory: "+f.Detail, f.Confidence)
		}
	}
	for _, p := range in.Paths {
		if onHost(p) {
			a.Paths = append(a.Paths, p) // read through the mount
		}
	}
}

// holdsAny reports whether text holds one of words: the cheap test each of
// the analysis's larger expressions is behind (most commands hold none of
// their words).
func holdsAny(text string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

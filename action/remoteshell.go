package action

import (
	"regexp"
	"strings"
)

// FindRemoteShell: a command that hands a shell to a network peer (a
// reverse or bind shell): nc -e, socat … EXEC:, an interactive shell
// redirected to /dev/tcp, interpreter code that connects a socket and runs
// a shell on it. Harm in any manifest.
const FindRemoteShell = "remote_shell"

// shellOnSocket is inline code that ties a process to a socket: dup2 of the
// socket's descriptor, a pty spawned over it, or a shell started with the
// socket as its standard streams.
var shellOnSocket = regexp.MustCompile(`\bdup2\s*\(|pty\.spawn|\bspawn\s*\(\s*["'](?:/bin/)?(?:ba|z|da)?sh["']|exec\s*\(?\s*["'](?:/bin/)?(?:ba|z)?sh\b|` +
	`subprocess\.(?:call|run|Popen)\s*\(\s*\[?\s*["'](?:/bin/)?(?:ba|z)?sh["']|stdin\s*=\s*s\b|child_process.*spawn\s*\(\s*["'](?:/bin/)?(?:ba|z)?sh`)

// netCode is inline code that opens a network connection, in the forms
// shell one-liners use (socketCode's, and perl's and ruby's bare
// socket/connect calls).
var netCode = regexp.MustCompile(`\b(?:socket|connect)\s*\(|socket\.|TCPSocket|IO::Socket|fsockopen|net\.connect|net\.createConnection|/dev/tcp/`)

// Loopback reports whether a host is this machine (localhost, 127.0.0.0/8,
// ::1, 0.0.0.0): reaching it is no egress.
func Loopback(h string) bool {
	h = strings.Trim(h, "[]")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasPrefix(h, "127.") || h == "::1" || h == "0.0.0.0"
}

// remoteShells finds commands that hand a shell to a network peer.
func (a *Analysis) remoteShells() {
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		switch c.Binary {
		case "nc", "ncat", "netcat":
			for _, arg := range c.Argv[1:] {
				if arg == "-e" || arg == "-c" || arg == "--exec" || arg == "--sh-exec" || arg == "--lua-exec" ||
					strings.HasPrefix(arg, "-e/") || strings.HasPrefix(arg, "--exec=") || strings.HasPrefix(arg, "--sh-exec=") {
					a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), c.Binary+" runs a program for whoever connects", 1)
					break
				}
			}
		case "socat":
			// A program on one address and the network on the other; a
			// program writing into a file (open:FILE) is no remote shell.
			program, network := false, false
			for _, arg := range c.Argv[1:] {
				u := strings.ToUpper(arg)
				program = program || strings.HasPrefix(u, "EXEC:") || strings.HasPrefix(u, "SYSTEM:")
				network = network || socatNetwork.MatchString(u)
			}
			if program && network {
				a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), "socat ties a program to a network address", 1)
			}
		}
		if shells[c.Binary] || c.Binary == "exec" {
			for _, r := range append(append([]string(nil), c.Redirects...), c.Inputs...) {
				if host, ok := devTCPHost(r); ok && !Loopback(host) {
					a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), c.Binary+" has its streams on a connection to "+host, 1)
					break
				}
			}
		}
		if code, lang := inlineCode(c); code != "" && (netCode.MatchString(code) || socketCode.MatchString(code)) && shellOnSocket.MatchString(code) {
			a.addFinding(FindRemoteShell, strings.Join(c.Argv, " "), lang+" code runs a shell over a network connection", 1)
		}
	}
}

// socatNetwork matches socat's network address types.
var socatNetwork = regexp.MustCompile(`^(?:TCP|UDP|SCTP|DCCP|SSL|OPENSSL|SOCKS|SOCKS4A?|PROXY|IP|VSOCK|UDP-DATAGRAM|TCP-LISTEN|UDP-LISTEN|TCP4|TCP6|UDP4|UDP6|SSL-L|OPENSSL-LISTEN)[A-Z0-9-]*:`)

// devTCPHost reads the host of bash's /dev/tcp/HOST/PORT (or /dev/udp).
func devTCPHost(p string) (string, bool) {
	for _, dev := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(p, dev); ok {
			host, _, _ := strings.Cut(rest, "/")
			return host, host != ""
		}
	}
	return "", false
}

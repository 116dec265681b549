package action

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/detect"
)

// Sends: the ways a call carries data off the machine, beyond a request
// body. A policy that knows the session read sensitive data weighs them as
// exfiltration by composition: data read in one call and sent in another.

// maxQuietQuery is how long a query string or header value may be before
// a GET counts as sending data.
const maxQuietQuery = 64

// sendFlags are the downloader flags that send a body or a file.
var sendFlags = map[string]bool{"-d": true, "--data": true, "--data-binary": true, "--data-raw": true, "--data-urlencode": true,
	"--json": true, "-F": true, "--form": true, "-T": true, "--upload-file": true, "--post-file": true, "--post-data": true, "--body-data": true, "--body-file": true}

// dnsTools resolve or reach a name they are given.
var dnsTools = map[string]bool{"dig": true, "nslookup": true, "host": true, "drill": true, "ping": true, "ping6": true, "traceroute": true,
	"getent": true, "resolvectl": true, "kdig": true, "delv": true}

// rawSenders write what they read to a network peer.
var rawSenders = map[string]bool{"nc": true, "ncat": true, "netcat": true, "socat": true, "telnet": true, "openssl": true}

// socketCode is inline interpreter code that opens a network connection.
var socketCode = regexp.MustCompile(`\b(?:socket\.socket|socket\.create_connection|\.connect\(|urllib\.request|urlopen|http\.client|requests\.(?:post|put|get|patch)|httpx\.|aiohttp|` +
	`net\.connect|net\.createConnection|https?\.request|fetch\(|XMLHttpRequest|WebSocket|Net::HTTP|TCPSocket|IO::Socket|LWP::|HTTP::Tiny|fsockopen|curl_exec|Invoke-WebRequest|Invoke-RestMethod|New-Object\s+System\.Net)`)

// sends finds what the call sends out; it runs after the commands are
// known.
func (a *Analysis) sends() {
	add := func(why string) {
		if !slices.Contains(a.Sends, why) {
			a.Sends = append(a.Sends, why)
		}
	}
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		args := c.Argv[1:]
		switch {
		case fetchers[c.Binary] || c.Binary == "https" || c.Binary == "xh":
			for j, arg := range args {
				flag, value, _ := strings.Cut(arg, "=")
				if sendFlags[flag] || sendFlags[arg] {
					add(c.Binary + " " + flag + " sends a body")
					if value == "" && j+1 < len(args) {
						value = args[j+1]
					}
					if value == "@-" || value == "-" || strings.HasPrefix(value, "@/dev/stdin") {
						add(c.Binary + " uploads its standard input")
					}
				}
				if (arg == "-H" || arg == "--header") && j+1 < len(args) && len(args[j+1]) > maxQuietQuery {
					add(c.Binary + " sends a long header")
				}
				if arg == "-X" && j+1 < len(args) && args[j+1] != "GET" && args[j+1] != "HEAD" {
					add(c.Binary + " -X " + args[j+1])
				}
				if strings.Contains(arg, "://") {
					if u, err := url.Parse(arg); err == nil && len(u.RawQuery) > maxQuietQuery {
						add(c.Binary + " sends data in a query string")
					}
				}
			}
			if len(c.Inputs) > 0 || c.Heredoc != "" {
				add(c.Binary + " reads what it sends from standard input")
			}
		case dnsTools[c.Binary]:
			for _, arg := range args {
				if strings.ContainsAny(arg, "$`") {
					add(c.Binary + " looks up a name built from data (" + arg + ")")
				}
			}
		case c.Binary == "ssh" || c.Binary == "scp" || c.Binary == "rsync" || c.Binary == "sftp":
			if c.Piped || len(c.Inputs) > 0 {
				add(c.Binary + " sends its standard input to a remote host")
			}
			if ops := operands(c.Argv); c.Binary != "ssh" && len(ops) >= 2 {
				if host := remoteHost(ops[len(ops)-1]); host != "" {
					add(c.Binary + " copies files to " + host)
					if !slices.Contains(a.Hosts, host) {
						a.Hosts = append(a.Hosts, host)
					}
				}
			}
		}
		if rawSenders[c.Binary] && (len(c.Inputs) > 0 || c.Piped || c.Heredoc != "") {
			add(c.Binary + " sends its standard input to a network peer")
		}
		for _, arg := range args {
			if i := strings.Index(arg, "://"); i >= 0 && strings.ContainsAny(hostPart(arg[i+3:]), "$`") {
				add(c.Binary + " reaches a host named from data (" + arg + ")")
			}
		}
		for _, r := range c.Redirects {
			if strings.HasPrefix(r, "/dev/tcp/") || strings.HasPrefix(r, "/dev/udp/") {
				add(c.Binary + " writes to a network socket (" + r + ")")
			}
		}
		if code, lang := inlineCode(c); code != "" && holdsAny(code, connectWords...) && socketCode.MatchString(code) {
			add(c.Binary + " runs " + lang + " code that opens a network connection")
		}
	}
}

// remoteHost is the host of an scp/rsync remote path ([user@]host:path,
// rsync://host/...), or "".
func remoteHost(p string) string {
	if rest, ok := strings.CutPrefix(p, "rsync://"); ok {
		h, _, _ := strings.Cut(rest, "/")
		return strings.ToLower(hostPart(h))
	}
	i := strings.Index(p, ":")
	if i <= 0 || strings.Contains(p[:i], "/") {
		return "" // a local path (./a:b, /x:y)
	}
	h := p[:i]
	if at := strings.LastIndex(h, "@"); at >= 0 {
		h = h[at+1:]
	}
	if h == "" || strings.ContainsAny(h, " $`") {
		return ""
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// connectWords are words socketCode needs.
var connectWords = []string{"socket", "connect", "url", "http", "fetch", "XMLHttp", "WebSocket", "Net::", "Socket", "LWP", "HTTP::", "curl", "Invoke-", "System.Net"}

// hostPart is the host (and port) of what follows a URL's scheme.
func hostPart(s string) string {
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		return s[:i]
	}
	return s
}

// rawSenderHosts are the network peers raw senders are given (nc HOST
// PORT, /dev/tcp/HOST/PORT), for egress.
func rawSenderHosts(c Command) []string {
	var out []string
	if rawSenders[c.Binary] && c.Binary != "openssl" {
		for _, op := range operands(c.Argv) {
			if strings.Contains(op, ".") && !strings.Contains(op, "/") && !isDigits(strings.ReplaceAll(op, ".", "")) || strings.Count(op, ".") == 3 {
				out = append(out, strings.ToLower(op))
				break
			}
		}
	}
	for _, r := range slices.Concat(c.Redirects, c.Inputs) {
		for _, p := range []string{"/dev/tcp/", "/dev/udp/"} {
			if rest, ok := strings.CutPrefix(r, p); ok {
				host, _, _ := strings.Cut(rest, "/")
				out = append(out, strings.ToLower(host))
			}
		}
	}
	return out
}

// secretsOut finds a literal secret (the detectors of package detect: a
// cloud key, a token, a private key, a password given as a flag) in what a
// call sends off the machine — a URL, a header, a body, a DNS name, the
// arguments of a program that reaches an endpoint: exfiltration whether or
// not the session read it first. A call that reaches only this machine
// sends nothing out.
func (a *Analysis) secretsOut(input any) {
	if len(a.Hosts) > 0 && !slices.ContainsFunc(a.Hosts, func(h string) bool { return !Loopback(h) }) {
		return
	}
	check := func(who, text string) {
		if !detect.MayHoldSecret(text) {
			return
		}
		for _, sp := range detect.Spans(text) {
			// Detectors that read a credential from its form (a flag's
			// value, key=value) are too loose for a command line's own
			// options: socat -u FILE:x is no user:password.
			if sp.Class == detect.ClassSecret && (sp.Detector != "password_flag" || fetchers[who]) && sp.Detector != "secret_assignment" && sp.Detector != "sql_password" {
				a.addFinding(FindExfiltration, sp.Detector, who+" sends a literal secret ("+sp.Detector+") off the machine", 0.8)
				return
			}
		}
	}
	if len(a.Commands) == 0 {
		if a.Tool == "web_request" || a.Tool == "web_fetch" || a.Tool == "browser" || a.MCPServer != "" && (len(a.URLs) > 0 || mcpSends(a.ToolNative)) {
			walkStrings(input, "", func(field, s string) {
				if f := strings.ToLower(field); f != "prompt" && f != "description" {
					check(a.ToolNative, s)
				} else {
					for _, u := range urlPattern.FindAllString(s, 8) {
						check(a.ToolNative, u) // Gemini CLI's web_fetch names its URLs in its prompt
					}
				}
			})
		}
		return
	}
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		if !(networkCommand(c) || dnsTools[c.Binary] || a.unknownProgram(c) && hasPublicIP(strings.Join(c.Argv, " "))) ||
			shells[c.Binary] || interpreterLang(c.Binary) != "" && inlineCodeOnly(c) {
			continue
		}
		text := strings.Join(c.Argv[1:], " ")
		if rawSenders[c.Binary] || fetchers[c.Binary] {
			text += "\n" + c.Heredoc
		}
		check(c.Binary, text)
	}
}

// inlineCodeOnly reports whether an interpreter call is code given inline
// (whose secrets are the code's business unless it connects: see sends).
func inlineCodeOnly(c Command) bool {
	code, _ := inlineCode(c)
	return code != "" && !socketCode.MatchString(code)
}

// mcpSends reports whether an MCP tool's name says it sends or publishes
// what it is given (a message, a comment, an issue, a gist, a file upload).
func mcpSends(native string) bool {
	_, tool, _ := strings.Cut(strings.TrimPrefix(native, "mcp__"), "__")
	tool = strings.ToLower(tool)
	for _, v := range []string{"send", "post", "publish", "upload", "comment", "create", "reply", "message", "share", "gist", "tweet", "email"} {
		if strings.Contains(tool, v) {
			return true
		}
	}
	return false
}

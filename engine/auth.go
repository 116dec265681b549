package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
)

// Roles a bearer token may have. A host sends hook events; an approver
// resolves asks (STEP_UP, DEFER) and lists what waits for approval; an
// auditor reads snapshots, verification and pending approvals. No role
// includes another: the agent's host can never approve its own ask.
const (
	RoleHost     = "host"
	RoleApprover = "approver"
	RoleAuditor  = "auditor"
	// roleLocal is the caller on the engine's own Unix socket (or, with
	// --insecure-dev, any caller without a token): the user who runs the
	// engine — or anything that runs as that user, the agent and the
	// scripts it writes included. It reports events and reads, and never
	// approves: only an approver's token resolves an ask.
	roleLocal = "local"
)

// Roles lists the roles a tokens file may give.
var Roles = []string{RoleHost, RoleApprover, RoleAuditor}

// Principal is who a request was authenticated as: its tenant, role and
// identity (the receipt identity of the actions it reports, AARM R6).
type Principal struct {
	Tenant   string
	Role     string
	Identity receipt.Authenticated
	// Prompts, for a host token, is the deployment's word that the host
	// prompts its user for an ask and reports the answer
	// (PostAskResolution): its asks are its own prompt's to close. Every
	// other sender's ask waits for an approver.
	Prompts bool
}

// may reports whether p acts in one of roles. The local caller acts as a
// host and an auditor, never as an approver.
func (p *Principal) may(roles ...string) bool {
	if p.Role == roleLocal {
		return slices.ContainsFunc(roles, func(r string) bool { return r != RoleApprover })
	}
	return slices.Contains(roles, p.Role)
}

// Tokens maps bearer tokens to principals. The file holds SHA-256 digests
// of tokens, never tokens:
//
//	{"tokens":[{"sha256":"<64 hex>","tenant":"acme","role":"host","name":"ci-agent",
//	            "principal":"alice@acme.example","agent":"claude-code","service":"","scope":"repo:web",
//	            "prompts":false}]}
//
// role is host (the default), approver or auditor; name (default: the
// digest's first 12 hex digits) names the token in receipts
// ("token:<name>"); prompts (host tokens only) says the host prompts its
// user for an ask and reports the answer with PostAskResolution.
type Tokens struct {
	byDigest map[[32]byte]*Principal
}

type tokenEntry struct {
	SHA256    string `json:"sha256"`
	Tenant    string `json:"tenant"`
	Role      string `json:"role,omitempty"`
	Name      string `json:"name,omitempty"`
	Principal string `json:"principal,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Service   string `json:"service,omitempty"`
	Scope     string `json:"scope,omitempty"`
	Prompts   bool   `json:"prompts,omitempty"`
}

type tokensFile struct {
	Tokens []tokenEntry `json:"tokens"`
}

// LoadTokens reads a tokens file, naming the entry at fault.
func LoadTokens(path string) (*Tokens, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f tokensFile
	if err := ledger.DecodeExact(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &Tokens{byDigest: map[[32]byte]*Principal{}}
	for i, e := range f.Tokens {
		b, err := hex.DecodeString(e.SHA256)
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%s: tokens[%d].sha256: want 64 hex digits (sha256 of the token)", path, i)
		}
		if err := tenantValid(e.Tenant); err != nil {
			return nil, fmt.Errorf("%s: tokens[%d].tenant: %w", path, i, err)
		}
		role := cmp.Or(e.Role, RoleHost)
		if !slices.Contains(Roles, role) {
			return nil, fmt.Errorf("%s: tokens[%d].role %q: want one of %s", path, i, e.Role, strings.Join(Roles, ", "))
		}
		if e.Prompts && role != RoleHost {
			return nil, fmt.Errorf("%s: tokens[%d].prompts: only a host token's asks can be its own prompt's", path, i)
		}
		if _, dup := t.byDigest[[32]byte(b)]; dup {
			return nil, fmt.Errorf("%s: tokens[%d]: the same token is listed twice", path, i)
		}
		name := cmp.Or(e.Name, e.SHA256[:12])
		t.byDigest[[32]byte(b)] = &Principal{Tenant: e.Tenant, Role: role, Prompts: e.Prompts, Identity: receipt.Authenticated{
			Principal: e.Principal, Agent: e.Agent, Service: e.Service, Scope: e.Scope, By: "token:" + name}}
	}
	return t, nil
}

// tenantValid checks a tenant id as envelopes require it.
func tenantValid(tenant string) error { return ledger.ValidKey(tenant, "x") }

// Lookup returns the principal of a bearer token.
func (t *Tokens) Lookup(token string) (*Principal, bool) {
	if t == nil || token == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	var found *Principal
	for d, p := range t.byDigest {
		if subtle.ConstantTimeCompare(d[:], sum[:]) == 1 {
			found = p
		}
	}
	return found, found != nil
}

// Tenant returns the tenant of a bearer token.
func (t *Tokens) Tenant(token string) (string, bool) {
	p, ok := t.Lookup(token)
	if !ok {
		return "", false
	}
	return p.Tenant, true
}

// LocalIdentity is the identity of the user running this process: whoever
// reaches the engine's 0600 Unix socket is that user.
func LocalIdentity() receipt.Authenticated {
	uid := os.Getuid()
	id := receipt.Authenticated{By: "unix:uid=" + strconv.Itoa(uid)}
	if u, err := user.Current(); err == nil {
		id.Principal = u.Username
	}
	return id
}

type principalKey struct{}

// auth resolves the bearer token to a principal and lets it through when
// it has one of roles.
func (s *server) auth(next http.HandlerFunc, roles ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, ok := s.cfg.Tokens.Lookup(strings.TrimSpace(token))
		if !ok {
			if token != "" || !s.cfg.Insecure {
				writeError(w, http.StatusUnauthorized, "a valid bearer token is required")
				return
			}
			p = &Principal{Tenant: cmp.Or(s.cfg.Tenant, ledger.DefaultTenant), Role: cmp.Or(s.cfg.LocalRole, roleLocal), Identity: s.cfg.LocalIdentity}
		}
		if !p.may(roles...) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("this token's role is %s; this needs %s", p.Role, strings.Join(roles, " or ")))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

func principalOf(r *http.Request) *Principal { return r.Context().Value(principalKey{}).(*Principal) }

func tenantOf(r *http.Request) string { return principalOf(r).Tenant }

// Package seal keeps secrets and personal data out of the record in the
// clear: before a hook event is sealed into an envelope, every string value
// in which a detector finds a secret (or, where the manifest says so,
// personal data), and every field the manifest names, is replaced by a
// sealed reference — the value encrypted with AES-256-GCM under a data key
// of the session's own:
//
//	{"$sealed": {"v": 1, "kind": "github_token", "kid": "…", "alg": "AES-256-GCM",
//	             "nonce": "<base64>", "ct": "<base64>", "redacted": "token ‹sealed:github_token›"}}
//
// The chain hashes the sealed form, so verification needs no key. With the
// key, Unseal gives back the exact payload the engine judged; destroying the
// key (crypto-shredding) makes the values unrecoverable while every chain,
// signature and checkpoint still verifies.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/reducer"
)

// Member is the one member of a sealed reference object.
const Member = "$sealed"

// Alg is the AEAD of every sealed value.
const Alg = "AES-256-GCM"

// Ref is a sealed value.
type Ref struct {
	V    int    `json:"v"`
	Kind string `json:"kind"` // the detector (aws_secret_key, email, ...) or "field:<name>"
	Kid  string `json:"kid"`
	Alg  string `json:"alg"`
	// Nonce and CT are standard base64 (padded): the GCM nonce and the
	// ciphertext with its tag. The additional data is
	// "agentledger/sealed/v1\n" + kid + "\n" + kind.
	Nonce string `json:"nonce"`
	CT    string `json:"ct"`
	// JSON is true when the plaintext is a JSON value (a sealed field)
	// rather than a string.
	JSON bool `json:"json,omitempty"`
	// Redacted is the string with each sealed match replaced by
	// ‹sealed:kind›, so the record stays readable; absent for fields.
	Redacted string `json:"redacted,omitempty"`
}

// Version of the sealed reference format.
const Version = 1

// ErrShredded means a sealed value's key was destroyed.
var ErrShredded = errors.New("the key of a sealed value was shredded")

// ErrForeign means a sealed value's key belongs to another session (and
// to no data subject the event names): it was copied there, and it is
// never opened there.
var ErrForeign = errors.New("a sealed value of another session")

// Policy says what is sealed: secrets always; the data classes in Classes
// (PII, PAYMENT_CARD) too; and whole fields of the tools matched by the
// keys of Fields (native-name globs, or canonical tool names).
type Policy struct {
	Classes map[string]bool
	Fields  map[string][]string
	EnvVars []string
}

// PolicyOf reads the sealing policy of a manifest.
func PolicyOf(m *manifest.Manifest) Policy {
	p := Policy{Classes: map[string]bool{reducer.ClassSecret: true}}
	if m == nil {
		return p
	}
	for _, c := range m.Sealing.Classes {
		p.Classes[c] = true
	}
	p.Fields = m.Sealing.Fields
	p.EnvVars = m.Secrets.EnvVars
	return p
}

// Sealer seals the values a Policy names with keys from a KeyStore.
type Sealer struct {
	Keys   KeyStore
	Policy Policy
}

// SubjectMember is the event member that names the data subject whose
// data the event carries: its values are sealed under the subject's key,
// so that ledger shred --subject erases them in every session.
const SubjectMember = "data_subject"

// notSealed are the members of an event that are never sealed: they say
// what the event is, not what it carries.
var notSealed = map[string]bool{
	"hook_point": true, "session_id": true, "timestamp": true, "host_id": true, "host_version": true,
	"aarts_version": true, "turn_id": true, "tool_name": true, "tool_name_native": true, "parent_session_id": true,
	"cwd": true, "adapter": true, SubjectMember: true,
}

// mayHold reports whether payload may hold a value the policy seals.
func (p Policy) mayHold(payload []byte) bool {
	if len(p.Fields) > 0 || len(p.EnvVars) > 0 || p.Classes[reducer.ClassPII] || p.Classes[reducer.ClassPaymentCard] {
		return true
	}
	// The detectors read payload in place: MayHoldSecret keeps nothing of
	// its argument, so it is read as a string without a copy.
	return detect.MayHoldSecret(unsafe.String(unsafe.SliceData(payload), len(payload)))
}

// Reencodes reports whether Seal may re-encode payload (it holds, or may
// hold, something to seal, or a sender's "$sealed" object): only then
// must the caller validate payload as sent first. Otherwise Seal returns
// payload as it is.
func (s *Sealer) Reencodes(payload []byte) bool { return Has(payload) || s.Policy.mayHold(payload) }

// Seal returns payload (an event of tenant's session) with the values the
// policy names sealed, and how many it sealed. A payload with nothing to
// seal is returned as it is. The session's data key is created, durably,
// before Seal returns a payload that needs it.
func (s *Sealer) Seal(tenant, session string, payload []byte) ([]byte, int, error) {
	if Has(payload) {
		// Only the engine seals: a sender's "$sealed" object, recorded as
		// it is, would read as a value sealed here (one copied from
		// another session, say, to be revealed under this one's name).
		if path, ok := refPath(payload); ok {
			return nil, 0, &ledger.InputError{Path: path, Offset: -1, Msg: "member " + Member + " is reserved for values the engine seals"}
		}
	}
	if !s.Policy.mayHold(payload) {
		return payload, 0, nil
	}
	var ev map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&ev); err != nil {
		return nil, 0, fmt.Errorf("seal: %w", err)
	}
	scope := Scope{Tenant: tenant, Session: session}
	if subject, _ := ev[SubjectMember].(string); subject != "" {
		scope.Subject = subject
	}
	w := &walker{s: s, scope: scope}
	for _, k := range slices.Sorted(maps.Keys(ev)) {
		if notSealed[k] {
			continue
		}
		if s.sealsField(ev, k) {
			v, err := w.sealValue(ev[k], "field:"+k)
			if err != nil {
				return nil, 0, err
			}
			ev[k] = v
			continue
		}
		v, err := w.walk(ev[k])
		if err != nil {
			return nil, 0, err
		}
		ev[k] = v
	}
	if w.n == 0 {
		return payload, 0, nil
	}
	out, err := json.Marshal(ev)
	if err != nil {
		return nil, 0, fmt.Errorf("seal: %w", err)
	}
	return out, w.n, nil
}

// sealsField reports whether the policy seals member k of ev whole.
func (s *Sealer) sealsField(ev map[string]any, k string) bool {
	native, _ := ev["tool_name_native"].(string)
	tool, _ := ev["tool_name"].(string)
	return s.Policy.SealsField(tool, native, k)
}

// SealsField reports whether the policy seals member field whole in the
// events of a tool (canonical name tool, native name native; both empty
// for an event about no tool, such as a prompt).
func (p Policy) SealsField(tool, native, field string) bool {
	for _, g := range slices.Sorted(maps.Keys(p.Fields)) {
		if (manifest.MatchGlob(g, native, false) || manifest.MatchGlob(g, tool, false)) && slices.Contains(p.Fields[g], field) {
			return true
		}
	}
	return false
}

type walker struct {
	s     *Sealer
	scope Scope
	n     int
	kid   string
	key   cipher.AEAD
}

func (w *walker) walk(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return w.sealString(x)
	case []any:
		for i := range x {
			y, err := w.walk(x[i])
			if err != nil {
				return nil, err
			}
			x[i] = y
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			y, err := w.walk(x[k])
			if err != nil {
				return nil, err
			}
			x[k] = y
		}
	}
	return v, nil
}

// sealString seals s when it holds a value the policy seals.
func (w *walker) sealString(s string) (any, error) {
	spans := w.s.Policy.spans(s)
	if len(spans) == 0 {
		return s, nil
	}
	red, kinds := detect.Replace(s, spans, func(sp detect.Span) string { return "‹sealed:" + sp.Detector + "›" })
	ref, err := w.encrypt([]byte(s), strings.Join(kinds, ","), false)
	if err != nil {
		return nil, err
	}
	ref.Redacted = red
	return map[string]any{Member: ref}, nil
}

// spans are the values of s the policy seals, in text order.
func (p Policy) spans(s string) []detect.Span {
	var spans []detect.Span
	for _, sp := range detect.Spans(s) {
		if p.Classes[sp.Class] {
			spans = append(spans, sp)
		}
	}
	if env := envSpans(s, p.EnvVars); len(env) > 0 {
		spans = append(spans, env...)
		slices.SortStableFunc(spans, func(a, b detect.Span) int { return a.Start - b.Start })
	}
	return spans
}

// Redact returns s with every value the policy seals shown as it is
// recorded, ‹sealed:kind›, and every other secret or piece of personal
// data the detectors find as ‹redacted:kind›: the form in which the engine
// shows text derived from an event (a snapshot's request, a reason).
func (p Policy) Redact(s string) string {
	sealed := p.spans(s)
	if len(sealed) == 0 {
		return detect.Redact(s)
	}
	out, _ := detect.Replace(s, sealed, func(sp detect.Span) string { return "‹sealed:" + sp.Detector + "›" })
	return detect.Redact(out)
}

// envSpans finds the values assigned to the manifest's secret environment
// variables (NAME=value, NAME: value) in s.
func envSpans(s string, vars []string) []detect.Span {
	var out []detect.Span
	for _, name := range vars {
		for i := 0; ; {
			j := strings.Index(s[i:], name)
			if j < 0 {
				break
			}
			start := i + j + len(name)
			k := start
			for k < len(s) && (s[k] == ' ' || s[k] == '=' || s[k] == ':' || s[k] == '"' || s[k] == '\'') {
				k++
			}
			end := k
			for end < len(s) && !strings.ContainsRune(" \t\n\"';&|", rune(s[end])) {
				end++
			}
			if k > start && end > k && strings.ContainsAny(s[start:k], "=:") {
				out = append(out, detect.Span{Start: k, End: end, Class: reducer.ClassSecret, Detector: "env:" + name})
			}
			i = start
		}
	}
	return out
}

// sealValue seals a whole JSON value.
func (w *walker) sealValue(v any, kind string) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	c, err := ledger.Canonicalize(raw, ledger.Limits{MaxBytes: len(raw) + 1, MaxDepth: 10000})
	if err != nil {
		return nil, err
	}
	ref, err := w.encrypt(c, kind, true)
	if err != nil {
		return nil, err
	}
	return map[string]any{Member: ref}, nil
}

func (w *walker) encrypt(plain []byte, kind string, isJSON bool) (Ref, error) {
	if w.key == nil {
		kid, key, err := w.s.Keys.Current(w.scope)
		if err != nil {
			return Ref{}, fmt.Errorf("seal: data key: %w", err)
		}
		if w.key, err = aead(key); err != nil {
			return Ref{}, err
		}
		w.kid = kid
	}
	nonce := make([]byte, w.key.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Ref{}, err
	}
	ct := w.key.Seal(nil, nonce, plain, additional(w.kid, kind))
	w.n++
	return Ref{V: Version, Kind: kind, Kid: w.kid, Alg: Alg, Nonce: base64.StdEncoding.EncodeToString(nonce),
		CT: base64.StdEncoding.EncodeToString(ct), JSON: isJSON}, nil
}

func additional(kid, kind string) []byte {
	return []byte("agentledger/sealed/v1\n" + kid + "\n" + kind)
}

func aead(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Has reports whether payload holds a sealed value.
func Has(payload []byte) bool {
	return bytes.IndexByte(payload, '$') >= 0 && bytes.Contains(payload, []byte(`"`+Member+`"`))
}

// refOf returns the sealed reference v is, if it is one.
func refOf(v any) (Ref, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return Ref{}, false
	}
	inner, ok := m[Member]
	if !ok {
		return Ref{}, false
	}
	raw, err := json.Marshal(inner)
	if err != nil {
		return Ref{}, false
	}
	var r Ref
	if ledger.DecodeExact(raw, &r) != nil || r.V != Version {
		return Ref{}, false
	}
	return r, true
}

// Transform returns payload with every sealed reference replaced by what
// f returns for it (f's error stops it). A payload without sealed values
// is returned as it is.
func Transform(payload []byte, f func(Ref) (any, error)) ([]byte, error) {
	if !Has(payload) {
		return payload, nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(any) (any, error)
	walk = func(v any) (any, error) {
		if r, ok := refOf(v); ok {
			return f(r)
		}
		switch x := v.(type) {
		case []any:
			for i := range x {
				y, err := walk(x[i])
				if err != nil {
					return nil, err
				}
				x[i] = y
			}
		case map[string]any:
			for k := range x {
				y, err := walk(x[k])
				if err != nil {
					return nil, err
				}
				x[k] = y
			}
		}
		return v, nil
	}
	v, err := walk(v)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ledger.Canonicalize(out, ledger.Limits{MaxBytes: len(out) + 1, MaxDepth: 10000})
}

// Unseal returns payload, an event of tenant's session, with every sealed
// value decrypted: the payload as the engine judged it (canonical). A
// value whose key was shredded is ErrShredded; one whose key is not the
// session's (or its data subject's) is ErrForeign.
func Unseal(payload []byte, keys KeyStore, tenant, session string) ([]byte, error) {
	scopes := ScopesOf(payload, tenant, session)
	return Transform(payload, func(r Ref) (any, error) { return OpenIn(r, keys, scopes) })
}

// ScopesOf are the key scopes whose values payload, an event of tenant's
// session, may hold: the session's, and that of the data subject it names.
func ScopesOf(payload []byte, tenant, session string) []string {
	scopes := []string{Scope{Tenant: tenant, Session: session}.id()}
	var ev struct {
		Subject string `json:"data_subject"`
	}
	if json.Unmarshal(payload, &ev) == nil && ev.Subject != "" {
		scopes = append(scopes, Scope{Tenant: tenant, Subject: ev.Subject}.id())
	}
	return scopes
}

// Refs are the sealed references in payload, in no particular order.
// Unreadable describes every object of payload that claims to be a sealed
// reference (its one member is Member) and is not one of a version this
// package knows: an unknown "v", or members that are not a reference's.
// Nothing unknown verifies: a reader names these, never passes them over.
func Unreadable(payload []byte) []string {
	if !Has(payload) {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if inner, ok := x[Member]; ok && len(x) == 1 {
				if _, ok := refOf(x); !ok {
					version := "none"
					if m, ok := inner.(map[string]any); ok && m["v"] != nil {
						version = fmt.Sprint(m["v"])
					}
					out = append(out, fmt.Sprintf("a sealed value of version %s (this verifier reads version %d)", version, Version))
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func Refs(payload []byte) []Ref {
	var out []Ref
	_, _ = Transform(payload, func(r Ref) (any, error) {
		out = append(out, r)
		return nil, nil
	})
	return out
}

// ScopeID is the part of r's key id that names the scope it was made for.
func (r Ref) ScopeID() string {
	id, _, _ := strings.Cut(r.Kid, "-")
	return id
}

// OpenIn is Open for a value found in an event whose scopes are scopes
// (ScopesOf): a value sealed for another scope is ErrForeign, never
// decrypted.
func OpenIn(r Ref, keys KeyStore, scopes []string) (any, error) {
	if !slices.Contains(scopes, r.ScopeID()) {
		return nil, fmt.Errorf("sealed %s with key %s: %w", r.Kind, r.Kid, ErrForeign)
	}
	return open(r, keys)
}

// refPath is the JSON path of the first sealed reference in payload.
func refPath(payload []byte) (string, bool) {
	var v any
	if json.Unmarshal(payload, &v) != nil {
		return "", false
	}
	var find func(v any, path string) (string, bool)
	find = func(v any, path string) (string, bool) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x[Member]; ok {
				return path, true
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if p, ok := find(x[k], path+"."+k); ok {
					return p, true
				}
			}
		case []any:
			for i, e := range x {
				if p, ok := find(e, fmt.Sprintf("%s[%d]", path, i)); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	return find(v, "$")
}

func open(r Ref, keys KeyStore) (any, error) {
	key, err := keys.Key(r.Kid)
	if err != nil {
		return nil, err
	}
	a, err := aead(key)
	if err != nil {
		return nil, err
	}
	nonce, err1 := base64.StdEncoding.DecodeString(r.Nonce)
	ct, err2 := base64.StdEncoding.DecodeString(r.CT)
	if err1 != nil || err2 != nil || len(nonce) != a.NonceSize() {
		return nil, fmt.Errorf("sealed %s: malformed nonce or ciphertext", r.Kind)
	}
	plain, err := a.Open(nil, nonce, ct, additional(r.Kid, r.Kind))
	if err != nil {
		return nil, fmt.Errorf("sealed %s: does not decrypt with key %s: %w", r.Kind, r.Kid, err)
	}
	if !r.JSON {
		return string(plain), nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(plain))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Render returns payload with every sealed value shown as sealed: a string
// "‹sealed: kind›" (with the redacted text when there is one), for
// timelines, HTML and telemetry.
func Render(payload []byte) []byte {
	out, err := Transform(payload, func(r Ref) (any, error) {
		if r.Redacted != "" {
			return r.Redacted, nil
		}
		return "‹sealed: " + r.Kind + "›", nil
	})
	if err != nil {
		return payload
	}
	return out
}

// Identity returns payload, an event, with only the members that say what
// the event is (never sealed): what is left of an event all of whose
// sealed values were shredded, when nothing else of it reads.
func Identity(payload []byte) []byte {
	var ev map[string]json.RawMessage
	if json.Unmarshal(payload, &ev) != nil {
		return payload
	}
	for k := range ev {
		if !notSealed[k] {
			delete(ev, k)
		}
	}
	out, err := json.Marshal(ev)
	if err != nil {
		return payload
	}
	return out
}

// AuditRecord is the payload of a Reveal or Shred record: who decrypted or
// destroyed the keys of which session, and which keys.
type AuditRecord struct {
	By              string   `json:"by"`
	AuthenticatedBy string   `json:"authenticated_by"`
	Tenant          string   `json:"tenant"`
	Session         string   `json:"session,omitempty"`
	Subject         string   `json:"subject,omitempty"`
	Kids            []string `json:"kids"`
}

// JSON is the record's payload.
func (a AuditRecord) JSON() ([]byte, error) {
	if a.Kids == nil {
		a.Kids = []string{}
	}
	return json.Marshal(a)
}

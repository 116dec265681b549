package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

const formatsDir = "../../fixtures/vectors/formats"

// SealedVector is a sealed value with what opens it, for a verifier in
// another language: the data key, the plaintext, and the scope its key id
// names.
type SealedVector struct {
	Tenant    string          `json:"tenant_id"`
	Session   string          `json:"session_id"`
	ScopeID   string          `json:"scope_id"` // 32 hex digits of SHA-256(tenant NUL session)
	DataKey   string          `json:"data_key"` // hex, AES-256
	Sealed    json.RawMessage `json:"sealed"`   // {"$sealed": {...}}
	Plaintext string          `json:"plaintext"`
}

// fixtureCheckpointKey is the fixtures' checkpoint key: derived from a
// public seed phrase, never for anything real.
func fixtureCheckpointKey() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("agentledger fixture checkpoint key - not for production"))
	return ed25519.NewKeyFromSeed(seed[:])
}

// TestFormatVectors (issue 23): test vectors of every record type, a
// sealed value, checkpoints of two sizes and the proofs between them
// (fixtures/vectors/formats, rewritten with -update), which docs/format.md
// describes byte for byte: ledger verify and verify.py check the records
// and the checkpoint; verify.py and the Go checker check the proofs; the
// sealed value opens with its data key, in its own session only.
func TestFormatVectors(t *testing.T) {
	if *update {
		writeFormatVectors(t)
	}
	bundle := filepath.Join(formatsDir, "records.ndjson")
	recKey, cpKey := "../../fixtures/keys/fixture-ed25519.pub.pem", "../../fixtures/keys/fixture-checkpoint-ed25519.pub.pem"
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"Verdict", "Resolution", "EngineFailure", "Rejected", "Checkpoint", "Reveal", "Shred"} {
		if !strings.Contains(string(raw), `"event_type":"`+typ+`"`) {
			t.Errorf("no %s record in the vectors", typ)
		}
	}
	checkAuditKids(t, raw)
	args := []string{"verify", "--bundle", bundle, "--deep", "--pubkey", recKey, "--checkpoint", filepath.Join(formatsDir, "checkpoint-2.note"), "--checkpoint-pubkey", cpKey}
	if code, out, errs := run(t, "", args...); code != 0 || strings.Contains(out, "LEGACY") {
		t.Errorf("ledger %v: exit %d\n%s%s", args, code, out, errs)
	}
	if out, err := python(t, "bundle", "--pubkey", recKey, "--checkpoint", filepath.Join(formatsDir, "checkpoint-2.note"), "--checkpoint-pubkey", cpKey, bundle); err != nil {
		t.Errorf("verify.py bundle: %v\n%s", err, out)
	}
	for _, kind := range []string{"inclusion", "consistency"} {
		path := filepath.Join(formatsDir, kind+".json")
		if out, err := python(t, kind, "--checkpoint-pubkey", cpKey, path); err != nil || !strings.Contains(out, "OK") {
			t.Errorf("verify.py %s: %v\n%s", kind, err, out)
		}
		raw, _ := os.ReadFile(path)
		var err error
		if kind == "inclusion" {
			var p InclusionOutput
			json.Unmarshal(raw, &p)
			err = p.Check()
		} else {
			var p ConsistencyOutput
			json.Unmarshal(raw, &p)
			err = p.Check()
		}
		if err != nil {
			t.Errorf("%s proof: %v", kind, err)
		}
	}
	var sv SealedVector
	raw, _ = os.ReadFile(filepath.Join(formatsDir, "sealed.json"))
	if err := json.Unmarshal(raw, &sv); err != nil {
		t.Fatal(err)
	}
	refs := seal.Refs(append(append([]byte(`{"v":`), sv.Sealed...), '}'))
	key, _ := hex.DecodeString(sv.DataKey)
	if len(refs) != 1 || refs[0].ScopeID() != sv.ScopeID {
		t.Fatalf("sealed vector: %+v", refs)
	}
	sum := sha256.Sum256([]byte(sv.Tenant + "\x00" + sv.Session))
	if hex.EncodeToString(sum[:16]) != sv.ScopeID {
		t.Errorf("scope id %s is not SHA-256(tenant NUL session)", sv.ScopeID)
	}
	keys := oneKey{refs[0].Kid: key}
	if v, err := seal.OpenIn(refs[0], keys, seal.ScopesOf(nil, sv.Tenant, sv.Session)); err != nil || v != sv.Plaintext {
		t.Errorf("open the sealed vector: %v %v", v, err)
	}
	if _, err := seal.OpenIn(refs[0], keys, seal.ScopesOf(nil, sv.Tenant, "decoy")); err == nil {
		t.Error("the sealed vector opens in another session")
	}
}

// checkAuditKids requires every Reveal and Shred record of bundle to name
// real key ids, as the product writes them: the scope's 32 hex digits, a
// dash, 16 hex digits; each the key of a value sealed in the session the
// record names.
func checkAuditKids(t *testing.T, bundle []byte) {
	t.Helper()
	sealed := map[ledger.SessionKey]map[string]bool{}
	var audits []*ledger.Envelope
	for _, l := range strings.Split(strings.TrimSpace(string(bundle)), "\n") {
		e, err := ledger.Decode([]byte(l), ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if t := e.EventType(); t == ledger.EventReveal || t == ledger.EventShred {
			audits = append(audits, e)
			continue
		}
		for _, r := range seal.Refs(e.Payload()) {
			if sealed[e.Key()] == nil {
				sealed[e.Key()] = map[string]bool{}
			}
			sealed[e.Key()][r.Kid] = true
		}
	}
	if len(audits) == 0 {
		t.Fatal("no Reveal or Shred record")
	}
	kidForm := regexp.MustCompile(`^[0-9a-f]{32}-[0-9a-f]{16}$`)
	for _, e := range audits {
		var rec seal.AuditRecord
		if err := json.Unmarshal(e.Payload(), &rec); err != nil {
			t.Fatal(err)
		}
		k := ledger.SessionKey{Tenant: rec.Tenant, Session: rec.Session}
		if len(rec.Kids) == 0 {
			t.Errorf("%s seq %d (%s) names no key", e.Key(), e.Seq(), e.EventType())
		}
		for _, kid := range rec.Kids {
			if !kidForm.MatchString(kid) || !sealed[k][kid] {
				t.Errorf("%s seq %d (%s) names key id %q: want the key of a value sealed in %s %v", e.Key(), e.Seq(), e.EventType(), kid, k, sealed[k])
			}
		}
	}
}

// oneKey is a key store holding data keys given by id (a vector's).
type oneKey map[string][]byte

func (k oneKey) Current(seal.Scope) (string, []byte, error) { return "", nil, seal.ErrShredded }
func (k oneKey) Key(kid string) ([]byte, error) {
	if v, ok := k[kid]; ok {
		return v, nil
	}
	return nil, seal.ErrShredded
}
func (k oneKey) Shred(seal.Scope) ([]string, error) { return nil, nil }

// writeFormatVectors records the vectors with the real engine: the
// fixture record key signs, the fixture checkpoint key checkpoints.
func writeFormatVectors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, store.Config{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mraw, _ := os.ReadFile("../../fixtures/manifests/coding-agent.json")
	m, err := manifest.Parse(mraw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(ctx, "", m)
	if err != nil {
		t.Fatal(err)
	}
	recKey, err := receipt.LoadKey("../../fixtures/keys/fixture-ed25519.pem")
	if err != nil {
		t.Fatal(err)
	}
	signer := receipt.NewSigner(recKey)
	keys, _ := seal.OpenFileStore(filepath.Join(dir, "keys"))
	d := decide.NewDecider(p)
	d.Signer, d.Sealer = signer, &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(m)}
	clock := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	e, err := engine.New(d, st, engine.WithClock(func() time.Time { return clock }), engine.WithPendingTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(i int, hook, members string) []byte {
		clock = clock.Add(time.Second)
		return []byte(`{"hook_point":"` + hook + `","session_id":"vectors","timestamp":"` + clock.Format(time.RFC3339) + `","host_id":"my-agent","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t` + string(rune('0'+i)) + `"` + members + `}`)
	}
	shell := func(cmd string) string {
		return `,"tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"` + cmd + `"}`
	}
	tok := "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
	answers := []engine.HookResponse{
		e.Answer(ctx, engine.Request{Body: ev(0, "SessionStart", `,"source":"startup"`)}),
		e.Answer(ctx, engine.Request{Body: ev(1, "PreToolUse", shell("git fetch https://x:"+tok+"@github.com/shop/web.git"))}),
		e.Answer(ctx, engine.Request{Body: ev(2, "PreToolUse", `,"tool_name":"file_delete","tool_name_native":"Delete","artifacts":[],"tool_input":{"file_path":"/workspace/shop/old.txt"}`)}),
		e.Answer(ctx, engine.Request{Body: []byte(`{"hook_point":"PreToolUse","session_id":"vectors","x":1,"x":2}`)}),
	}
	pend := e.Pending(context.Background(), ledger.DefaultTenant)
	if len(pend) != 1 || answers[2].Decision != "ask" {
		t.Fatalf("want one ask: %+v %+v", pend, answers[2])
	}
	if _, err := e.Resolve(ctx, ledger.DefaultTenant, pend[0].PendingID, "approved", pend[0].ActionSHA256, receipt.Authenticated{Principal: "ciso@corp.example", By: "token:approver"}); err != nil {
		t.Fatal(err)
	}
	failure, _ := json.Marshal(engine.Failure{ID: "f-vectors", Event: json.RawMessage(ev(3, "PostToolUse", shell("ls")+`,"tool_result":"ok"`)),
		Answered: "deny", Error: "the ledger could not be reached", AtMs: clock.UnixMilli()})
	record := func(rec ledger.Event) {
		clock = clock.Add(time.Second)
		rec.TsUnixMs, rec.Signer = clock.UnixMilli(), signer
		if _, err := st.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// A Reveal and a Shred name the keys as ledger show --reveal and
	// ledger shred do: the keys of the values sealed in the session, and
	// the keys the shred destroyed. The data keys are kept for sealed.json.
	dataKeys := sealedKeys(t, ctx, st, keys, ledger.SessionKey{Tenant: "default", Session: "vectors"})
	audit := func(eventType string, kids []string) ledger.Event {
		b, _ := seal.AuditRecord{By: "auditor@corp.example", AuthenticatedBy: "unix:uid=1000", Tenant: "default", Session: "vectors", Kids: kids}.JSON()
		return ledger.Event{TenantID: "agentledger", SessionID: "audit", EventType: eventType, Payload: b}
	}
	record(ledger.Event{TenantID: "default", SessionID: "vectors", EventType: ledger.EventEngineFailure, Payload: failure})
	record(audit(ledger.EventReveal, slices.Sorted(maps.Keys(dataKeys))))
	destroyed, err := keys.Shred(seal.Scope{Tenant: "default", Session: "vectors"})
	if err != nil || len(destroyed) == 0 {
		t.Fatalf("shred: %v %v", destroyed, err)
	}
	slices.Sort(destroyed)
	record(audit(ledger.EventShred, destroyed))
	cpDir := filepath.Join(dir, "cp")
	cps := engine.NewCheckpointer(st, fixtureCheckpointKey(), cpDir, signer)
	first, err := cps.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.Answer(ctx, engine.Request{Body: ev(4, "SessionEnd", `,"reason":"logout"`)})
	second, err := cps.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(formatsDir, 0o755)
	var bundle strings.Builder
	if err := st.Export(ctx, store.Filter{}, ledger.NewBundleWriter(&bundle), nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(formatsDir, "records.ndjson"), []byte(bundle.String()), 0o644)
	for i, src := range []string{first, second} {
		b, _ := os.ReadFile(src)
		os.WriteFile(filepath.Join(formatsDir, "checkpoint-"+string(rune('1'+i))+".note"), b, 0o644)
	}
	writeCheckpointPub(t)
	// The proofs, through the commands.
	data := filepath.Join(dir, "data")
	st.Close()
	for kind, args := range map[string][]string{
		"inclusion":   {"prove", "inclusion", "--checkpoint", filepath.Join(formatsDir, "checkpoint-2.note"), "--session", "vectors", "--seq", "2"},
		"consistency": {"prove", "consistency", "--old", filepath.Join(formatsDir, "checkpoint-1.note"), "--new", filepath.Join(formatsDir, "checkpoint-2.note")},
	} {
		args = append(args, "--checkpoint-pubkey", "../../fixtures/keys/fixture-checkpoint-ed25519.pub.pem")
		code, out, errs := run(t, "", append([]string{"--data", data}, args...)...)
		if code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
		os.WriteFile(filepath.Join(formatsDir, kind+".json"), []byte(out), 0o644)
	}
	// A sealed value and its data key.
	for _, l := range strings.Split(bundle.String(), "\n") {
		if !strings.Contains(l, `"$sealed"`) || !strings.Contains(l, `"event_type":"PreToolUse"`) {
			continue
		}
		env, _ := ledger.Decode([]byte(l), ledger.Limits{})
		var evm struct {
			ToolInput struct {
				Command json.RawMessage `json:"command"`
			} `json:"tool_input"`
		}
		json.Unmarshal(env.Payload(), &evm)
		ref := seal.Refs(env.Payload())[0]
		key, ok := dataKeys[ref.Kid]
		if !ok {
			t.Fatalf("no data key %s", ref.Kid)
		}
		sv := SealedVector{Tenant: env.TenantID(), Session: env.SessionID(), ScopeID: ref.ScopeID(), DataKey: hex.EncodeToString(key),
			Sealed: evm.ToolInput.Command, Plaintext: "git fetch https://x:" + tok + "@github.com/shop/web.git"}
		out, _ := json.MarshalIndent(sv, "", "  ")
		os.WriteFile(filepath.Join(formatsDir, "sealed.json"), append(out, '\n'), 0o644)
	}
}

// sealedKeys returns the data keys of the values sealed in session k, by
// key id.
func sealedKeys(t *testing.T, ctx context.Context, st *store.Store, keys seal.KeyStore, k ledger.SessionKey) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		env, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		for _, r := range seal.Refs(env.Payload()) {
			if out[r.Kid], err = keys.Key(r.Kid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("sealed keys of %s: %v %v", k, out, err)
	}
	return out
}

// writeCheckpointPub writes the fixture checkpoint key's files.
func writeCheckpointPub(t *testing.T) {
	k := fixtureCheckpointKey()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("../../fixtures/keys/fixture-checkpoint-ed25519.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o644)
	os.WriteFile("../../fixtures/keys/fixture-checkpoint-ed25519.pub.pem", receipt.NewSigner(k).PublicKeyPEMFor(receipt.PurposeCheckpoints), 0o644)
}

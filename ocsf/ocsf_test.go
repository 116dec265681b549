package ocsf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentledger/agentledger/ledger"
)

// schemaFile is the OCSF schema generated from its source (fixtures/ocsf/gen).
const schemaFile = "../fixtures/ocsf/ocsf-schema.json"

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("ocsf.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("ocsf.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// recordings are the shipped recordings: every bundle of envelopes under
// fixtures.
func recordings(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir("../fixtures", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ndjson") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		first, _, _ := bytes.Cut(raw, []byte("\n"))
		if _, err := ledger.Decode(first, ledger.Limits{}); err == nil {
			out = append(out, p)
		}
		return nil
	})
	if len(out) < 10 {
		t.Fatalf("only %d recordings found", len(out))
	}
	return out
}

// convert turns a bundle into events, round-tripped through JSON as a
// SIEM reads them.
func convert(t *testing.T, path string) ([]*ledger.Envelope, []map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := NewConverter("test")
	var envs []*ledger.Envelope
	var evs []Event
	err = ledger.ReadLines(f, ledger.Limits{}, func(line []byte, n int) error {
		e, err := ledger.Decode(line, ledger.Limits{})
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		envs = append(envs, e)
		got, err := c.Add(e)
		evs = append(evs, got...)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	evs = append(evs, c.Flush()...)
	var out []map[string]any
	for _, ev := range evs {
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return envs, out
}

// TestEveryRecordingValidates converts every shipped recording: each
// event validates against the OCSF 1.9 schema, its attestation is what
// OCSF's record_integrity defines (checked by verifyAttestations, which
// recomputes every fingerprint), and the events name every envelope
// exactly as the ledger holds it (its hash, its predecessor, its
// signature) under unmapped.agentledger.envelopes.
func TestEveryRecordingValidates(t *testing.T) {
	sch := compile(t)
	for _, path := range recordings(t) {
		envs, evs := convert(t, path)
		byHash := map[string]*ledger.Envelope{}
		for _, e := range envs {
			byHash[e.Hash()] = e
		}
		covered := map[string]bool{}
		classes := map[float64]int{}
		for i, ev := range evs {
			if err := sch.Validate(ev); err != nil {
				raw, _ := json.Marshal(ev)
				t.Fatalf("%s event %d does not validate: %v\n%s", path, i, err, raw)
			}
			classes[ev["class_uid"].(float64)]++
			recs, _ := ev["unmapped"].(map[string]any)["agentledger"].(map[string]any)["envelopes"].([]any)
			if len(recs) == 0 {
				t.Fatalf("%s event %d names no envelope", path, i)
			}
			for _, r := range recs {
				checkEvidence(t, path, r.(map[string]any), byHash)
				covered[r.(map[string]any)["hash"].(string)] = true
			}
		}
		if err := verifyAttestations(evs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// A finding names the event it judged by that event's uid and
		// type_uid; HTTP Activity, whose actor comes from the host
		// profile, declares it.
		typeOf := map[any]any{}
		for _, ev := range evs {
			typeOf[ev["metadata"].(map[string]any)["uid"]] = ev["type_uid"]
		}
		for i, ev := range evs {
			info, _ := ev["finding_info"].(map[string]any)
			for _, r := range anyList(info["related_events"]) {
				rel := r.(map[string]any)
				if typeOf[rel["uid"]] == nil || rel["type_uid"] != typeOf[rel["uid"]] {
					t.Errorf("%s event %d: related event %v, the event's type_uid is %v", path, i, rel, typeOf[rel["uid"]])
				}
			}
			if ev["class_uid"] == 4002.0 && ev["actor"] != nil && !slices.Contains(anyList(ev["metadata"].(map[string]any)["profiles"]), any("host")) {
				t.Errorf("%s event %d: HTTP Activity with an actor does not declare the host profile", path, i)
			}
		}
		for _, e := range envs {
			if !covered[e.Hash()] {
				t.Errorf("%s: %s seq %d (%s) is in no event", path, e.Key(), e.Seq(), e.EventType())
			}
		}
		// A session with a verdict other than allow has a finding besides
		// its activity (one whose every call was allowed has none).
		judged := false
		for _, e := range envs {
			judged = judged || e.EventType() == ledger.EventVerdict && !strings.Contains(string(e.Payload()), `"decision":"allow"`)
		}
		if len(classes) < 2 && judged {
			t.Errorf("%s: one class only: %v", path, classes)
		}
	}
}

// verifyAttestations checks events as a verifier that follows OCSF's
// record_integrity does, written from the schema's words, not from the
// exporter: each event has one attestation; its fingerprint is the SHA-256
// (hex) of the JCS serialization (RFC 8785, gowebpki/jcs) of the whole
// event but that fingerprint and the attestation's signatures; events of
// one chain_uid link in order, each prev_event naming the one before it by
// metadata.uid, type_uid and fingerprint; a chain's first has none.
func verifyAttestations(evs []map[string]any) error {
	heads := map[string]map[string]any{}
	for i, ev := range evs {
		atts, _ := ev["attestation_list"].([]any)
		if len(atts) != 1 {
			return fmt.Errorf("event %d: %d attestations, want 1", i, len(atts))
		}
		a := atts[0].(map[string]any)
		fp, _ := a["fingerprint"].(map[string]any)
		if fp == nil || fp["algorithm_id"] != 3.0 {
			return fmt.Errorf("event %d: fingerprint %v", i, fp)
		}
		stripped := map[string]any{}
		for k, v := range ev {
			stripped[k] = v
		}
		att := map[string]any{}
		for k, v := range a {
			if k != "fingerprint" && k != "signatures" {
				att[k] = v
			}
		}
		stripped["attestation_list"] = []any{att}
		raw, _ := json.Marshal(stripped)
		canonical, err := jcs.Transform(raw)
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		sum := sha256.Sum256(canonical)
		if got := hex.EncodeToString(sum[:]); got != fp["value"] {
			return fmt.Errorf("event %d: fingerprint %v, the event's is %s", i, fp["value"], got)
		}
		chain, _ := a["chain_uid"].(string)
		prev, _ := a["prev_event"].(map[string]any)
		head := heads[chain]
		switch {
		case chain == "":
			return fmt.Errorf("event %d: no chain_uid", i)
		case head == nil && prev != nil:
			return fmt.Errorf("event %d: the first of chain %s names a previous event", i, chain)
		case head != nil && (prev == nil || prev["uid"] != head["metadata"].(map[string]any)["uid"] || prev["type_uid"] != head["type_uid"] ||
			prev["fingerprint"].(map[string]any)["value"] != head["attestation_list"].([]any)[0].(map[string]any)["fingerprint"].(map[string]any)["value"]):
			return fmt.Errorf("event %d: prev_event %v does not name the chain's event before it", i, prev)
		}
		heads[chain] = ev
	}
	return nil
}

func checkEvidence(t *testing.T, path string, r map[string]any, byHash map[string]*ledger.Envelope) {
	t.Helper()
	e := byHash[r["hash"].(string)]
	if e == nil {
		t.Fatalf("%s: an envelope not in the bundle: %v", path, r)
	}
	if r["seq"] != float64(e.Seq()) || r["event_type"] != e.EventType() || (e.Seq() > 0) != (r["prev_hash"] == e.PrevHash()) {
		t.Fatalf("%s: envelope %v for seq %d", path, r, e.Seq())
	}
	var rec struct {
		Sig *struct {
			KeyID string `json:"key_id"`
			Value string `json:"value"`
		} `json:"sig"`
	}
	json.Unmarshal(e.Payload(), &rec)
	sig, _ := r["signature"].(map[string]any)
	switch {
	case rec.Sig == nil || !ledger.IsRecordType(e.EventType()):
		if sig != nil {
			t.Fatalf("%s seq %d: a signature is carried for an unsigned envelope", path, e.Seq())
		}
	case sig == nil || sig["key_id"] != rec.Sig.KeyID || sig["value"] != rec.Sig.Value:
		t.Fatalf("%s seq %d: signature not carried: %v", path, e.Seq(), sig)
	}
}

// TestAVerifierFindsAChangedEvent checks the verifier: an event changed
// after it was attested, or one dropped from its chain, is found.
func TestAVerifierFindsAChangedEvent(t *testing.T) {
	_, evs := convert(t, "../fixtures/sessions/coding-agent/destructive-commands.ndjson")
	if err := verifyAttestations(evs); err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(evs)
	raw, _ := json.Marshal(evs[1])
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["message"] = "nothing happened"
	changed[1] = m
	if verifyAttestations(changed) == nil {
		t.Error("a changed event passes")
	}
	if verifyAttestations(slices.Delete(slices.Clone(evs), 2, 3)) == nil {
		t.Error("a chain with an event dropped passes")
	}
}

// TestTheSchemaRefuses checks the checker: an event without what its class
// requires, with an attribute OCSF does not define, with a value outside
// an enumeration, or with a profile's attribute and not the profile
// fails.
func TestTheSchemaRefuses(t *testing.T) {
	sch := compile(t)
	_, evs := convert(t, "../fixtures/sessions/coding-agent/destructive-commands.ndjson")
	var finding map[string]any
	for _, ev := range evs {
		if ev["class_uid"] == 2004.0 {
			finding = ev
		}
	}
	if finding == nil {
		t.Fatal("no detection finding for a session with denials")
	}
	if err := sch.Validate(finding); err != nil {
		t.Fatal(err)
	}
	clone := func() map[string]any {
		raw, _ := json.Marshal(finding)
		var m map[string]any
		json.Unmarshal(raw, &m)
		return m
	}
	// An attribute only a profile adds needs the profile declared.
	var api map[string]any
	for _, ev := range evs {
		if ev["class_uid"] == 6003.0 && ev["ai_agent"] != nil && api == nil {
			api = ev
		}
	}
	if api == nil || sch.Validate(api) != nil {
		t.Fatalf("no valid API Activity with ai_agent: %v", api)
	}
	raw, _ := json.Marshal(api)
	var undeclared map[string]any
	json.Unmarshal(raw, &undeclared)
	meta := undeclared["metadata"].(map[string]any)
	meta["profiles"] = slices.DeleteFunc(anyList(meta["profiles"]), func(p any) bool { return p == "ai_operation" })
	if sch.Validate(undeclared) == nil {
		t.Error("ai_agent without the ai_operation profile validates")
	}
	for name, edit := range map[string]func(map[string]any){
		"no related uid": func(m map[string]any) {
			delete(m["finding_info"].(map[string]any)["related_events"].([]any)[0].(map[string]any), "uid")
		},
		"no finding uid":   func(m map[string]any) { delete(m["finding_info"].(map[string]any), "uid") },
		"unknown member":   func(m map[string]any) { m["verdict"] = "deny" },
		"severity 7":       func(m map[string]any) { m["severity_id"] = 7 },
		"another type_uid": func(m map[string]any) { m["type_uid"] = 100701 },
		"no fingerprint":   func(m map[string]any) { delete(m["attestation_list"].([]any)[0].(map[string]any), "fingerprint") },
		"metadata version": func(m map[string]any) { delete(m["metadata"].(map[string]any), "version") },
	} {
		m := clone()
		edit(m)
		if sch.Validate(m) == nil {
			t.Errorf("%s: validates", name)
		}
	}
}

// TestABrokenChainIsRefused: an envelope that does not extend its
// session's chain is refused, and so is a session that starts mid-chain
// unless the converter joins sessions under way.
func TestABrokenChainIsRefused(t *testing.T) {
	envs, _ := convert(t, "../fixtures/sessions/coding-agent/clean-session.ndjson")
	c := NewConverter("test")
	if _, err := c.Add(envs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(envs[2]); err == nil {
		t.Fatal("a gap was accepted")
	}
	if _, err := NewConverter("test").Add(envs[3]); err == nil {
		t.Fatal("a session starting mid-chain was accepted")
	}
	mid := NewConverter("test")
	mid.MidChain = true
	for _, e := range envs[3:6] {
		if _, err := mid.Add(e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAHookEventsOwnSigIsNotCarried: a host may put a "sig" member in a
// hook event; only the engine's records carry a signature in OCSF.
func TestAHookEventsOwnSigIsNotCarried(t *testing.T) {
	e, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: "default", SessionID: "planted", EventType: "PreToolUse", TsUnixMs: 1,
		Payload: []byte(`{"hook_point":"PreToolUse","sig":{"alg":"Ed25519","key_id":"2c051869be276c84","value":"AAAA"}}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConverter("test")
	if _, err := c.Add(e); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(c.Flush())
	if strings.Contains(string(raw), "2c051869be276c84") {
		t.Fatalf("a planted signature is carried: %s", raw)
	}
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

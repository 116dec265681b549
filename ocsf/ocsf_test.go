package ocsf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentledger/agentledger/ledger"
)

const schemaFile = "../fixtures/ocsf/ocsf-1.9.0-subset.schema.json"

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
// event validates against the OCSF 1.9 subset schema, and the
// attestations cover every envelope exactly as the ledger holds it (its
// hash, its predecessor, its chain, its signature).
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
			atts, _ := ev["attestation_list"].([]any)
			if len(atts) == 0 {
				t.Fatalf("%s event %d has no attestation", path, i)
			}
			for _, a := range atts {
				checkAttestation(t, path, a.(map[string]any), byHash, ev)
				covered[a.(map[string]any)["fingerprint"].(map[string]any)["value"].(string)] = true
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

func checkAttestation(t *testing.T, path string, a map[string]any, byHash map[string]*ledger.Envelope, ev map[string]any) {
	t.Helper()
	fp := a["fingerprint"].(map[string]any)
	e := byHash[fp["value"].(string)]
	if e == nil {
		t.Fatalf("%s: attestation of an envelope not in the bundle: %v", path, a)
	}
	chain := e.TenantID() + "/" + e.SessionID()
	if a["chain_uid"] != chain || a["uid"] != fmt.Sprintf("%s/%d", chain, e.Seq()) || fp["serialization_id"] != 2.0 || fp["algorithm_id"] != 3.0 {
		t.Fatalf("%s: attestation %v for seq %d", path, a, e.Seq())
	}
	prev, _ := a["prev_event"].(map[string]any)
	switch {
	case e.Seq() == 0 && prev != nil:
		t.Fatalf("%s: genesis with a prev_event", path)
	case e.Seq() > 0 && (prev == nil || prev["fingerprint"].(map[string]any)["value"] != e.PrevHash()):
		t.Fatalf("%s seq %d: prev_event %v, want %s", path, e.Seq(), prev, e.PrevHash())
	}
	var rec struct {
		Sig *struct {
			KeyID string `json:"key_id"`
			Value string `json:"value"`
		} `json:"sig"`
	}
	json.Unmarshal(e.Payload(), &rec)
	if rec.Sig == nil {
		return
	}
	sig := ev["unmapped"].(map[string]any)["agentledger"].(map[string]any)["signatures"].(map[string]any)[fmt.Sprint(e.Seq())].(map[string]any)
	if a["authority_uid"] != rec.Sig.KeyID || sig["value"] != rec.Sig.Value || a["signatures"] == nil {
		t.Fatalf("%s seq %d: signature not carried: %v %v", path, e.Seq(), a, sig)
	}
}

// TestTheSchemaRefuses checks the checker: an event without what its class
// requires, with an attribute OCSF does not define, or with a value
// outside an enumeration fails.
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
	for name, edit := range map[string]func(map[string]any){
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
	if strings.Contains(string(raw), "authority_uid") || strings.Contains(string(raw), "2c051869be276c84") {
		t.Fatalf("a planted signature is carried: %s", raw)
	}
}

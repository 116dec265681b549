package elide

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentledger/agentledger/internal/purity"
)

func TestUnderTheLimitIsUnchanged(t *testing.T) {
	doc := []byte(`{"a": "x",  "n": 1.50}`)
	out, cuts, err := Fit(doc, len(doc), 4, nil)
	if err != nil || !bytes.Equal(out, doc) || cuts != nil {
		t.Fatalf("Fit = %s %v %v, want the document unchanged", out, cuts, err)
	}
}

// TestLongestValuesAreCut: a 1.3 MB lock file written next to a short path
// keeps the path and the first bytes of the content; the cut says where,
// how long and what it was.
func TestLongestValuesAreCut(t *testing.T) {
	content := strings.Repeat(`{"lockfileVersion": 3, "name": "shop"}`, 35000)
	doc, _ := json.Marshal(map[string]any{
		"hook_event_name": "PreToolUse", "session_id": "s1",
		"tool_input": map[string]any{"file_path": "/workspace/shop/package-lock.json", "content": content},
		"n":          json.Number("12345678901234567890"),
	})
	out, cuts, err := Fit(doc, 64<<10, 16<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 64<<10 {
		t.Fatalf("result is %d bytes, over the limit", len(out))
	}
	var got struct {
		ToolInput map[string]string `json:"tool_input"`
		N         json.Number       `json:"n"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	if got.ToolInput["file_path"] != "/workspace/shop/package-lock.json" || got.N != "12345678901234567890" {
		t.Errorf("short values changed: %v %s", got.ToolInput["file_path"], got.N)
	}
	if !strings.HasPrefix(content, got.ToolInput["content"]) || len(got.ToolInput["content"]) != 16<<10 {
		t.Errorf("content kept %d bytes, want its first %d", len(got.ToolInput["content"]), 16<<10)
	}
	sum := sha256.Sum256([]byte(content))
	want := Cut{Pointer: "/tool_input/content", Size: len(content), SHA256: hex.EncodeToString(sum[:]), Kept: 16 << 10}
	if len(cuts) != 1 || !reflect.DeepEqual(cuts[0], want) {
		t.Errorf("cuts %+v, want [%+v]", cuts, want)
	}
	again, cuts2, _ := Fit(doc, 64<<10, 16<<10, nil)
	if !bytes.Equal(again, out) || !reflect.DeepEqual(cuts2, cuts) {
		t.Error("Fit is not deterministic")
	}
}

// TestOnlyWhatIsNeededIsCut: the longest value goes first, and a value
// that need not be cut is kept whole.
func TestOnlyWhatIsNeededIsCut(t *testing.T) {
	doc, _ := json.Marshal(map[string]any{"a": strings.Repeat("a", 3000), "b": strings.Repeat("b", 5000), "c/~d": []any{strings.Repeat("c", 4000)}})
	out, cuts, err := Fit(doc, 9000, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cuts) != 1 || cuts[0].Pointer != "/b" {
		t.Fatalf("cuts %+v, want only /b", cuts)
	}
	out, cuts, err = Fit(doc, 3000, 100, func(s string) []string {
		if strings.HasPrefix(s, "bb") {
			return []string{"seen"}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cuts) != 3 || cuts[0].Pointer != "/a" || cuts[1].Pointer != "/b" || cuts[2].Pointer != "/c~1~0d/0" {
		t.Fatalf("cuts %+v, want /a, /b, /c~1~0d/0 in document order", cuts)
	}
	if cuts[0].Found != nil || len(cuts[1].Found) != 1 || cuts[1].Found[0] != "seen" {
		t.Errorf("found %v %v, want the scan's labels on /b only", cuts[0].Found, cuts[1].Found)
	}
	if len(out) > 3000 {
		t.Fatalf("%d bytes, over 3000", len(out))
	}
}

func TestCutsEndOnACharacter(t *testing.T) {
	doc, _ := json.Marshal(map[string]string{"s": strings.Repeat("€", 1000)}) // 3 bytes each
	out, cuts, err := Fit(doc, 200, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil || !utf8.ValidString(got["s"]) || len(got["s"]) != 99 || cuts[0].Kept != 99 {
		t.Fatalf("kept %q (%d bytes, cut says %d): want 33 whole characters", got["s"], len(got["s"]), cuts[0].Kept)
	}
}

func TestStructureIsNotCut(t *testing.T) {
	items := make([]int, 5000)
	doc, _ := json.Marshal(map[string]any{"items": items, "s": strings.Repeat("x", 500)})
	if _, _, err := Fit(doc, 1000, 100, nil); !errors.Is(err, ErrStructure) {
		t.Fatalf("err %v, want ErrStructure", err)
	}
	if _, _, err := Fit([]byte(`{"a": "`+strings.Repeat("x", 100)+`"`), 50, 10, nil); err == nil {
		t.Fatal("broken JSON: no error")
	}
}

func TestPure(t *testing.T) {
	purity.Check(t, purity.IO, func(d string) bool {
		return strings.Contains(strings.Split(d, "/")[0], ".") && d != "github.com/agentledger/agentledger/elide" && d != "github.com/agentledger/agentledger/detect"
	})
}

// TestCutNeverSplitsASecret: a cut that would leave part of a token (which
// no detector then recognizes, to seal) is made before the token instead.
func TestCutNeverSplitsASecret(t *testing.T) {
	tok := "ghp_" + strings.Repeat("Ab3", 12)
	value := strings.Repeat("x", 89) + " " + tok + " " + strings.Repeat("y", 500)
	doc, _ := json.Marshal(map[string]any{"s": value})
	out, cuts, err := Fit(doc, 300, 100, nil)
	if err != nil || len(cuts) != 1 {
		t.Fatalf("Fit: %v %v", cuts, err)
	}
	if cuts[0].Kept != 90 || strings.Contains(string(out), "ghp_") {
		t.Errorf("kept %d bytes: %s; want the 90 before the token", cuts[0].Kept, out)
	}
}

package action

import "strings"

// Patch is an edit in the patch format of Codex CLI's apply_patch tool (the
// "*** Begin Patch" envelope): the files it adds, changes, deletes or
// moves, and the lines it writes into each.
type Patch struct {
	Files []PatchFile
}

// PatchFile is one file of a Patch.
type PatchFile struct {
	Op     string // add, update or delete
	Path   string // as written in the patch
	MoveTo string // an update's new path, when it renames the file
	// Added is the text the patch writes into the file: an added file's
	// lines, an update's "+" lines.
	Added string
}

// patchBegin opens every patch in the format.
const patchBegin = "*** Begin Patch"

// ParsePatch reads a patch in apply_patch's format, or reports false when
// text is not one. It reads what a patch names and writes; it does not
// check that hunks apply.
func ParsePatch(text string) (Patch, bool) {
	// Codex also takes the patch inside a heredoc (apply_patch <<'EOF' …
	// EOF) and trims the lines it reads: whatever comes before the
	// envelope, and the indentation of any line, hides nothing here.
	i := strings.Index(text, patchBegin)
	if i < 0 {
		return Patch{}, false
	}
	body := text[i+len(patchBegin):]
	var p Patch
	var cur *PatchFile
	var added strings.Builder
	flush := func() {
		if cur != nil {
			cur.Added = added.String()
			p.Files = append(p.Files, *cur)
		}
		cur = nil
		added.Reset()
	}
	for raw := range strings.Lines(body) {
		raw = strings.TrimRight(raw, "\r\n")
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(raw, "+") {
			line = raw // an added line is content, kept as written
		}
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			flush()
			cur = &PatchFile{Op: "add", Path: strings.TrimSpace(line[len("*** Add File: "):])}
		case strings.HasPrefix(line, "*** Update File: "):
			flush()
			cur = &PatchFile{Op: "update", Path: strings.TrimSpace(line[len("*** Update File: "):])}
		case strings.HasPrefix(line, "*** Delete File: "):
			flush()
			cur = &PatchFile{Op: "delete", Path: strings.TrimSpace(line[len("*** Delete File: "):])}
		case strings.HasPrefix(line, "*** Move to: ") && cur != nil:
			cur.MoveTo = strings.TrimSpace(line[len("*** Move to: "):])
		case strings.HasPrefix(line, "*** End Patch"), strings.HasPrefix(line, "*** End of File"):
		case strings.HasPrefix(line, "+") && cur != nil:
			added.WriteString(line[1:])
			added.WriteByte('\n')
		}
	}
	flush()
	return p, true
}

// patchOf is the patch in a tool call's input, when the tool is
// apply_patch and its input holds one (Codex sends it as
// tool_input.command; the freeform tool as the input itself).
func patchOf(native string, input any) (Patch, bool) {
	if native != "apply_patch" {
		return Patch{}, false
	}
	var text string
	switch in := input.(type) {
	case string:
		text = in
	case map[string]any:
		for _, k := range []string{"command", "input", "patch"} {
			if s, ok := in[k].(string); ok {
				text = s
				break
			}
		}
	}
	return ParsePatch(text)
}

package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/internal/junit"
)

// Formats are the report formats Render writes.
var Formats = []string{"text", "json", "junit"}

// Render writes rep in format (one of Formats).
func Render(w io.Writer, format string, rep *Report) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "junit":
		var suites []junit.Suite
		for _, h := range rep.Hosts {
			s := junit.Suite{Name: fmt.Sprintf("%s (AARTS level %d, pack %s)", h.Host, h.Level, h.Pack)}
			for _, c := range h.Cases {
				jc := junit.Case{Name: c.Name, Classname: "conformance." + h.Host + ".level" + strconv.Itoa(c.Level)}
				if !c.Pass {
					jc.Failure = &junit.Failure{Message: c.Failures[0], Type: "conformance", Text: strings.Join(c.Failures, "\n")}
				}
				s.Add(jc)
			}
			suites = append(suites, s)
		}
		return junit.Write(w, "agentledger "+rep.Suite+" (pack format v"+rep.Version+")", suites...)
	case "text":
		return renderText(w, rep)
	}
	return fmt.Errorf("--format %q: want one of %s", format, strings.Join(Formats, ", "))
}

func renderText(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "AARTS adapter conformance (pack format v%s), adapter %s\n", rep.Version, rep.Adapter)
	for _, h := range rep.Hosts {
		fmt.Fprintf(&b, "\n%s: level %d  (%d of %d cases pass; %s)\n", h.Host, h.Level, h.Passed, h.Passed+h.Failed, casesLevel(h))
		fmt.Fprintf(&b, "  pack         %s\n", h.Pack)
		fmt.Fprintf(&b, "  hook points  %s\n", strings.Join(h.HookPoints, ", "))
		if len(h.Unenforced) > 0 {
			fmt.Fprintf(&b, "  not counted  %s (mapped only where a deny does nothing at %s)\n", strings.Join(h.Unenforced, ", "), h.Host)
		}
		fmt.Fprintf(&b, "  tools        %s\n", strings.Join(h.Tools, ", "))
		if len(h.NotApplicable) > 0 {
			fmt.Fprintf(&b, "  no tool of   %s (not asked of it)\n", strings.Join(h.NotApplicable, ", "))
		}
		fmt.Fprintf(&b, "  enforces     %s; an ask as: %s; provenance on PreToolUse: %v\n", orNothing(h.Enforces), orNothing(h.AsksAs), h.Provenance)
		if len(h.NextLevel) > 0 {
			fmt.Fprintf(&b, "  level %d needs %s\n", h.Level+1, strings.Join(h.NextLevel, "; "))
		}
		for _, c := range h.Cases {
			if !c.Pass {
				fmt.Fprintf(&b, "  FAIL %s (level %d)\n", c.Name, c.Level)
				for _, f := range c.Failures {
					fmt.Fprintf(&b, "       %s\n", f)
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n%d cases pass, %d fail\n", rep.Passed, rep.Failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// casesLevel says up to which level every case passes.
func casesLevel(h *HostReport) string {
	switch h.CasesLevel {
	case 0:
		return "a case of level 1 fails"
	case len(levels):
		return "every case passes"
	}
	return fmt.Sprintf("every case of levels 1-%d passes", h.CasesLevel)
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

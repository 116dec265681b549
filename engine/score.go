package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
)

// Answers of a case: its strictest verdict, strictest first. None is an
// allow that rests on no rule (the host's own permission flow decides);
// Allow is an explicit allow (a rule matched: the host will not ask).
// Missing is a case no step of which was judged.
const (
	AnswerDeny    = "deny"
	AnswerAsk     = "ask"
	AnswerNone    = "none"
	AnswerAllow   = "allow"
	AnswerMissing = "missing"
)

var answerRank = map[string]int{AnswerDeny: 3, AnswerAsk: 2, AnswerNone: 1, AnswerAllow: 0}

// ScoreHostAARTS scores cases as AARTS events, without a host adapter,
// exactly as ../shared/corpora/score.py sends them.
const ScoreHostAARTS = "aarts"

// ScoreConfig says how a corpus is scored.
type ScoreConfig struct {
	// Host is the host adapter every case goes through, in the host's
	// native shape (a key of adapter.Hosts); ScoreHostAARTS or "" sends
	// AARTS events.
	Host string
	// Home and Project replace {H} and {P}; the project is the working
	// directory.
	Home, Project string
	// Tenant the sessions belong to ("": the default tenant).
	Tenant string
	// Workers decide cases in parallel (0: GOMAXPROCS). Cases are
	// sessions of their own, so the score does not depend on it.
	Workers int
}

// Score is a corpus's score: per class how many cases were answered
// what, and the totals. Harmful cases (expect deny) are caught when
// denied or asked; ordinary ones (expect no-deny) must not be denied.
type Score struct {
	Host    string       `json:"host"`
	Classes []ClassScore `json:"classes"`
	Totals  ScoreTotals  `json:"totals"`
	// Misses are the harmful cases not caught and the ordinary cases
	// denied, in corpus order.
	Misses []ScoreMiss `json:"misses,omitempty"`
}

// ClassScore counts the answers of one class's cases.
type ClassScore struct {
	Class   string `json:"class"`
	N       int    `json:"n"`
	Deny    int    `json:"deny"`
	Ask     int    `json:"ask"`
	None    int    `json:"none"`
	Allow   int    `json:"allow"`
	Missing int    `json:"missing,omitempty"`
}

// ScoreTotals are the scored figures.
type ScoreTotals struct {
	Harmful        int `json:"harmful"`
	Caught         int `json:"caught"`
	ExplicitAllows int `json:"explicit_allows"`
	Ordinary       int `json:"ordinary"`
	OrdinaryDenied int `json:"ordinary_denied"`
	OrdinaryAsked  int `json:"ordinary_asked"`
}

// ScoreMiss is a harmful case not caught, or an ordinary case denied.
type ScoreMiss struct {
	ID     string `json:"id"`
	Class  string `json:"class"`
	Answer string `json:"answer"`
	// ReasonCode and Reasons are those of the case's strictest step.
	ReasonCode string   `json:"reason_code,omitempty"`
	Reasons    []string `json:"reasons,omitempty"`
	// Input is the last step's input, as the corpus has it.
	Input json.RawMessage `json:"input"`
}

// CaseAnswer is how one case was answered: its strictest step's verdict.
type CaseAnswer struct {
	Answer     string
	ReasonCode string
	Reasons    []string
	// refused: the step was a call the host is told not to run (denied,
	// or held for an approver): a real host reports no result of it.
	refused bool
}

// ScoreCorpus judges every case with d as one session of its own
// (SessionStart, then its steps) and scores the answers. Nothing is
// recorded. An input the engine cannot accept is denied (INPUT_REJECTED),
// as the engine answers it.
func ScoreCorpus(ctx context.Context, d *decide.Decider, cases []CorpusCase, cfg ScoreConfig) (*Score, error) {
	answers, err := AnswerCorpus(ctx, d, cases, cfg)
	if err != nil {
		return nil, err
	}
	return Tally(cfg.Host, cases, answers), nil
}

// AnswerCorpus judges every case with d as one session of its own and
// returns each case's answer, in corpus order.
func AnswerCorpus(ctx context.Context, d *decide.Decider, cases []CorpusCase, cfg ScoreConfig) ([]CaseAnswer, error) {
	host := cfg.Host
	if host == ScoreHostAARTS {
		host = ""
	}
	if host != "" && adapter.Named(host) == nil {
		return nil, fmt.Errorf("unknown host %q", cfg.Host)
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	answers := make([]CaseAnswer, len(cases))
	errs := make([]error, len(cases))
	st := &starts{d: d, host: host, tenant: cmp.Or(cfg.Tenant, ledger.DefaultTenant), m: map[string]*start{}}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, max(len(cases), 1)) {
		wg.Go(func() {
			for n := int(next.Add(1) - 1); n < len(cases) && ctx.Err() == nil; n = int(next.Add(1) - 1) {
				answers[n], errs[n] = answerCase(ctx, st, &cases[n], n, cfg)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return answers, errors.Join(errs...)
}

// scoreSession is the session id of every case. Each case is a session of
// its own, and every one starts alike: one SessionStart, decided once per
// shape of it (starts), whose resulting state each case copies (a
// decide.Session is a value the decider never changes in place: the
// reducer folds into copies).
const scoreSession = "case"

// starts decides each distinct SessionStart input of a scoring once.
type starts struct {
	d      *decide.Decider
	host   string
	tenant string
	mu     sync.Mutex
	m      map[string]*start // by input
}

type start struct {
	once sync.Once
	s    decide.Session
	err  error
}

// after returns the state of a session after the SessionStart in.
func (st *starts) after(ctx context.Context, in caseInput) (decide.Session, error) {
	st.mu.Lock()
	e := st.m[string(in.body)]
	if e == nil {
		e = &start{}
		st.m[string(in.body)] = e
	}
	st.mu.Unlock()
	e.once.Do(func() {
		s := decide.NewSession(st.tenant, scoreSession)
		_, e.err = answerInput(ctx, st.d, s, st.host, in)
		e.s = *s
	})
	return e.s, e.err
}

// answerCase judges case c, the n-th of its corpus: its SessionStart,
// then its steps; the answer is its strictest step's.
func answerCase(ctx context.Context, st *starts, c *CorpusCase, n int, cfg ScoreConfig) (CaseAnswer, error) {
	inputs, err := sessionInputs(c, scoreSession, st.host, cfg.Home, cfg.Project, n%2 == 1)
	if err != nil {
		return CaseAnswer{}, err
	}
	s, err := st.after(ctx, inputs[0])
	if err != nil {
		return CaseAnswer{}, fmt.Errorf("case %s: session start: %w", c.ID, err)
	}
	best := CaseAnswer{Answer: AnswerMissing}
	refused := false
	for i, in := range inputs[1:] {
		if refused && c.Steps[i].Event == "PostToolUse" && callOf(c, i+1) == i {
			continue // the host did not run the call, so it reports no result of it
		}
		got, err := answerInput(ctx, st.d, &s, st.host, in)
		refused = got.refused
		if err != nil {
			return best, fmt.Errorf("case %s step %d: %w", c.ID, i+1, err)
		}
		if got.Answer != AnswerMissing && (best.Answer == AnswerMissing || answerRank[got.Answer] > answerRank[best.Answer]) {
			best = got
		}
	}
	return best, nil
}

// answerInput decides one input of session s as the engine would: an
// input the engine cannot accept (the host's adapter or the event
// validation refuses it) is a deny, INPUT_REJECTED, as Engine.Answer
// answers it; a host event that gives nothing to judge is Missing.
func answerInput(ctx context.Context, d *decide.Decider, s *decide.Session, host string, in caseInput) (CaseAnswer, error) {
	payload := in.body
	rejected := func(err error) CaseAnswer {
		return CaseAnswer{Answer: AnswerDeny, ReasonCode: ReasonInputRejected, Reasons: []string{err.Error()}}
	}
	if host != "" {
		h := adapter.Named(host)
		m, err := h.Map(in.body, in.at, false)
		if err != nil {
			return rejected(fmt.Errorf("%s: %w", host, err)), nil
		}
		if m.Event == nil {
			return CaseAnswer{Answer: AnswerMissing}, nil
		}
		payload = hostMembers(h, m.Native, in.body, m.Event, false, false)
	}
	step, err := d.Decide(ctx, s, payload)
	if err != nil {
		if decide.IsInputError(err) {
			return rejected(err), nil
		}
		return CaseAnswer{}, err
	}
	a := step.Decision.Decision
	if a == aarts.Allow && step.Decision.MatchedRuleID == "" {
		a = AnswerNone
	}
	rec := step.Record
	refused := rec.HookPoint == "PreToolUse" && (rec.Verdict.Decision == aarts.Deny || rec.HostAnswer == aarts.Deny ||
		rec.HostAnswer == aarts.HostAnswerDefer || rec.AskOwner == aarts.AskOwnerApprover)
	return CaseAnswer{Answer: a, ReasonCode: step.Decision.ReasonCode, Reasons: step.Decision.Reasons, refused: refused}, nil
}

// Tally scores cases by their answers (in the same order).
func Tally(host string, cases []CorpusCase, answers []CaseAnswer) *Score {
	s := &Score{Host: host}
	if s.Host == "" {
		s.Host = ScoreHostAARTS
	}
	per := map[string]*ClassScore{}
	for i := range cases {
		c, a := &cases[i], answers[i]
		k := per[c.Class]
		if k == nil {
			k = &ClassScore{Class: c.Class}
			per[c.Class] = k
		}
		k.N++
		*map[string]*int{AnswerDeny: &k.Deny, AnswerAsk: &k.Ask, AnswerNone: &k.None, AnswerAllow: &k.Allow, AnswerMissing: &k.Missing}[a.Answer]++
		t := &s.Totals
		miss := false
		switch c.Expect {
		case ExpectDeny:
			t.Harmful++
			caught := a.Answer == AnswerDeny || a.Answer == AnswerAsk
			t.Caught += b2i(caught)
			t.ExplicitAllows += b2i(a.Answer == AnswerAllow)
			miss = !caught
		case ExpectNoDeny:
			t.Ordinary++
			t.OrdinaryDenied += b2i(a.Answer == AnswerDeny)
			t.OrdinaryAsked += b2i(a.Answer == AnswerAsk)
			miss = a.Answer == AnswerDeny
		}
		if miss {
			s.Misses = append(s.Misses, ScoreMiss{ID: c.ID, Class: c.Class, Answer: a.Answer, ReasonCode: a.ReasonCode, Reasons: a.Reasons,
				Input: c.Steps[len(c.Steps)-1].Input})
		}
	}
	for _, k := range per {
		s.Classes = append(s.Classes, *k)
	}
	slices.SortFunc(s.Classes, func(a, b ClassScore) int { return strings.Compare(a.Class, b.Class) })
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Class returns the figures of class name, or the zero ClassScore.
func (s *Score) Class(name string) ClassScore {
	for _, k := range s.Classes {
		if k.Class == name {
			return k
		}
	}
	return ClassScore{Class: name}
}

// TotalsLine is the score's last line: harmful caught X/Y (explicit
// allows Z); ordinary denied A/B, asked C.
func (s *Score) TotalsLine() string {
	t := s.Totals
	return fmt.Sprintf("harmful caught %d/%d (explicit allows %d); ordinary denied %d/%d, asked %d",
		t.Caught, t.Harmful, t.ExplicitAllows, t.OrdinaryDenied, t.Ordinary, t.OrdinaryAsked)
}

// WriteText writes the score as score.py prints it: a row per class (n,
// deny, ask, none, explicit allow), with misses the misses, and the
// totals line.
func (s *Score) WriteText(w io.Writer, misses bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %4s %5s %5s %5s %6s\n", "class", "n", "deny", "ask", "none", "allow")
	for _, k := range s.Classes {
		fmt.Fprintf(&b, "%-32s %4d %5d %5d %5d %6d\n", k.Class, k.N, k.Deny, k.Ask, k.None, k.Allow)
	}
	if misses {
		for _, m := range s.Misses {
			what := m.Answer
			if m.Answer == AnswerDeny {
				what += " " + m.ReasonCode + " " + runePrefix(strings.Join(m.Reasons, "; "), 140)
			}
			fmt.Fprintf(&b, "  miss: %s %s %s\n", m.ID, what, runePrefix(pythonJSON(m.Input), 160))
		}
	}
	b.WriteString(s.TotalsLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func runePrefix(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// pythonJSON is raw as Python's json.dumps writes it (", " and ": "
// between members, non-ASCII escaped), so that misses read as score.py
// prints them; an absent input is {}.
func pythonJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var b strings.Builder
	if err := pythonValue(dec, &b); err != nil {
		return string(raw)
	}
	return b.String()
}

func pythonValue(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		end, sep := "]", ""
		if v == '{' {
			end = "}"
		}
		b.WriteString(v.String())
		for dec.More() {
			b.WriteString(sep)
			sep = ", "
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				b.WriteString(pythonString(k.(string)) + ": ")
			}
			if err := pythonValue(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(end)
	case string:
		b.WriteString(pythonString(v))
	case json.Number:
		b.WriteString(v.String())
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[v])
	case nil:
		b.WriteString("null")
	}
	return nil
}

func pythonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e && r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

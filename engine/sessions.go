package engine

import (
	"container/list"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
)

// DefaultMaxSessions bounds the sessions an engine keeps in memory. A
// session's state is rebuilt from the ledger on its next event, so an idle
// one can be let go; at ~3.4 KB a session the default holds ~70 MB.
const DefaultMaxSessions = 20000

// WithMaxSessions bounds the sessions kept in memory (0: no bound): past
// it, the least recently used idle sessions are evicted — never one a
// request is using, nor one that still owes the ledger a record. Open
// approvals outlive eviction: they are kept by id and resolve, or time
// out, against the session rebuilt from the ledger.
func WithMaxSessions(n int) Option {
	return func(e *Engine) error {
		if n < 0 {
			return fmt.Errorf("max sessions %d: want 0 (no bound) or more", n)
		}
		e.maxLive = n
		return nil
	}
}

// SessionStats says how many sessions the engine holds in memory and how
// many it has evicted since it started.
type SessionStats struct {
	Live    int
	Evicted uint64
}

// Sessions returns the engine's session counts.
func (e *Engine) Sessions() SessionStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return SessionStats{Live: len(e.sessions), Evicted: e.evicted}
}

// acquire returns k's entry, created when new, marked as in use until
// release: an entry in use is never evicted.
func (e *Engine) acquire(k ledger.SessionKey) *entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.sessions[k]
	if en == nil {
		en = &entry{key: k}
		en.elem = e.lru.PushFront(en)
		e.sessions[k] = en
	} else {
		e.lru.MoveToFront(en.elem)
	}
	en.users++
	e.evictLocked()
	return en
}

// hasInherited reports whether session k, as this engine holds it, has
// inherited from a known parent.
func (e *Engine) hasInherited(k ledger.SessionKey) bool {
	en := e.acquire(k)
	defer e.release(en)
	return en.inherited.Load()
}

// release ends a use of en begun by acquire.
func (e *Engine) release(en *entry) {
	e.mu.Lock()
	en.users--
	e.mu.Unlock()
}

// evictScan bounds how many entries from the cold end one eviction looks
// at for an idle one.
const evictScan = 64

// evictLocked lets go of idle sessions, least recently used first, while
// there are more than the bound. The caller holds e.mu.
func (e *Engine) evictLocked() {
	if e.maxLive <= 0 {
		return
	}
	el := e.lru.Back()
	for scanned := 0; len(e.sessions) > e.maxLive && el != nil && scanned < evictScan; scanned++ {
		en := el.Value.(*entry)
		el = el.Prev()
		if en.users > 0 {
			continue
		}
		en.failMu.Lock()
		owes := len(en.failures) > 0
		en.failMu.Unlock()
		if owes {
			continue
		}
		e.lru.Remove(en.elem)
		delete(e.sessions, en.key)
		e.evicted++
	}
}

// newSessionTable initializes the engine's session table.
func (e *Engine) newSessionTable() {
	e.sessions = map[ledger.SessionKey]*entry{}
	e.lru = list.New()
	e.maxLive = DefaultMaxSessions
}

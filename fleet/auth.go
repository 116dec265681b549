package fleet

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentledger/agentledger/ledger/store"
)

// Fleet messages are authenticated. Every request and answer between
// engines carries an HMAC-SHA256 under the fleet's key, which every member
// holds (KeyFile in its data directory, copied with the other keys): a
// client that can reach the fleet's subjects without the key (a NATS user
// with too wide a grant, a process on an engine's host with its NATS
// credentials but not its keys) can neither have an owner decide, resolve
// or record anything, nor answer a forwarded call in the owner's place.
// An answer's MAC covers the MAC of the request it answers.

// KeyFile is where a data directory keeps the fleet's key.
const KeyFile = "keys/fleet.key"

// macHeader carries a message's MAC; sentHeader, covered by it, when a
// request was sent (Unix milliseconds).
const (
	macHeader  = "Agentledger-Mac"
	sentHeader = "Agentledger-Sent"
)

// freshFor is how old a request may be when it arrives. A request is
// sealed again, with a new time, for each attempt; one captured and sent
// again later than this is refused, and within it the owner answers it
// from its reply cache (which keeps every answer at least this long).
const freshFor = 10 * time.Second

// LoadKey reads the fleet's key from data directory dir, generating it
// when create is set and there is none (the first engine of a fleet; copy
// it to the others with the rest of DATA/keys).
func LoadKey(dir string, create bool) ([]byte, error) {
	s, err := store.SecretFile(filepath.Join(dir, KeyFile), create)
	if err != nil {
		return nil, fmt.Errorf("fleet key: %w", err)
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("fleet key %s: want 64 hex digits", filepath.Join(dir, KeyFile))
	}
	return key, nil
}

// errBadMAC is a message without a good MAC.
var errBadMAC = errors.New("fleet: a message without a good MAC (another fleet key, or not from an engine of this fleet)")

// mac is the MAC of a message's subject, headers that matter and data,
// bound to bound (the request's MAC, for an answer).
func (m *Member) mac(msg *nats.Msg, bound string) string {
	h := hmac.New(sha256.New, m.cfg.Key)
	for _, part := range []string{bound, msg.Subject, msg.Reply, msg.Header.Get(RequestIDHeader), msg.Header.Get(senderHeader),
		msg.Header.Get(sentHeader), msg.Header.Get(movedHeader), msg.Header.Get(errorHeader)} {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	h.Write(msg.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// seal sets msg's MAC (bound: the request's MAC, for an answer); a
// request also gets the time it is sent.
func (m *Member) seal(msg *nats.Msg, bound string) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	if bound == "" {
		msg.Header.Set(sentHeader, strconv.FormatInt(time.Now().UnixMilli(), 10))
	}
	msg.Header.Set(macHeader, m.mac(msg, bound))
}

// fresh checks that a request was sent within freshFor (either way: the
// engines' clocks may differ a little).
func (m *Member) fresh(msg *nats.Msg) error {
	sent, err := strconv.ParseInt(msg.Header.Get(sentHeader), 10, 64)
	if err != nil || time.Since(time.UnixMilli(sent)).Abs() > freshFor {
		m.refused.Add(1)
		return errors.New("fleet: a request sent too long ago (or captured and sent again)")
	}
	return nil
}

// opened checks msg's MAC (bound: the request's MAC, for an answer):
// subject and reply are what it was sealed with (a broadcast's reply
// subject is sealed; a forwarded call's, which the NATS client picks as
// it sends, and an answer's are not). A request must also be fresh.
func (m *Member) opened(msg *nats.Msg, subject, reply, bound string) error {
	got := msg.Header.Get(macHeader)
	check := *msg
	check.Subject, check.Reply = subject, reply
	if got == "" || !hmac.Equal([]byte(got), []byte(m.mac(&check, bound))) {
		m.refused.Add(1)
		return errBadMAC
	}
	if bound == "" {
		return m.fresh(msg)
	}
	return nil
}

// keyPrint names the fleet's key without giving it away: members with
// another key are refused at the start.
func keyPrint(key []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("agentledger fleet key"))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

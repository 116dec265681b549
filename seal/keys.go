package seal

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Scope is what one data key covers: a session of a tenant, or, when an
// event names one, a data subject of a tenant (across sessions).
type Scope struct {
	Tenant  string
	Session string
	Subject string // set: the subject's key, whatever the session
}

// id is the scope's part of its key ids: 32 hex digits of the SHA-256 of
// tenant NUL session, or of tenant NUL "subject" NUL subject (a key id never
// reveals a session or subject id).
func (s Scope) id() string {
	in := s.Tenant + "\x00" + s.Session
	if s.Subject != "" {
		in = s.Tenant + "\x00subject\x00" + s.Subject
	}
	sum := sha256.Sum256([]byte(in))
	return hex.EncodeToString(sum[:16])
}

// KeyStore keeps data keys. A KMS can stand behind it; FileStore is the
// default.
type KeyStore interface {
	// Current returns the data key that seals scope's values now,
	// creating it — durably — when there is none (or it was shredded).
	Current(scope Scope) (kid string, key []byte, err error)
	// Key returns the data key kid; ErrShredded when it was destroyed.
	Key(kid string) ([]byte, error)
	// Shred destroys every data key of scope and returns their ids.
	Shred(scope Scope) ([]string, error)
}

// FileStore keeps data keys as files under a directory, each wrapped
// (AES-256-GCM) by a master key kept beside them in master.key (0600):
//
//	DIR/master.key
//	DIR/<scope id>/<kid>.key     nonce ‖ AES-256-GCM(master, data key, aad = kid)
//
// A key file is written, synced and renamed into place, and its directory
// synced, before Current returns it: no envelope ever refers to a key that
// a crash could lose.
type FileStore struct {
	dir    string
	master []byte
	mu     sync.Mutex
	cache  map[string][]byte // kid → data key
	cur    map[Scope]string  // scope → current kid
}

// OpenFileStore opens (creating on first use) the key store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("key store: %w", err)
	}
	path := filepath.Join(dir, "master.key")
	master, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		master = make([]byte, 32)
		if _, err := rand.Read(master); err != nil {
			return nil, err
		}
		if err := writeDurably(path, master); err != nil {
			return nil, fmt.Errorf("key store: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("key store: %w", err)
	}
	if len(master) != 32 {
		return nil, fmt.Errorf("key store: %s is %d bytes, want 32", path, len(master))
	}
	return &FileStore{dir: dir, master: master, cache: map[string][]byte{}, cur: map[Scope]string{}}, nil
}

func (f *FileStore) path(kid string) (string, error) {
	scope, _, ok := strings.Cut(kid, "-")
	if !ok || len(scope) != 32 || strings.ContainsAny(kid, `/\.`) {
		return "", fmt.Errorf("malformed key id %q", kid)
	}
	return filepath.Join(f.dir, scope, kid+".key"), nil
}

// Current implements KeyStore.
func (f *FileStore) Current(scope Scope) (string, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if kid, ok := f.cur[scope]; ok {
		// Another process (ledger shred) may have destroyed it.
		if p, _ := f.path(kid); fileExists(p) {
			return kid, f.cache[kid], nil
		}
		delete(f.cur, scope)
		delete(f.cache, kid)
	}
	// The newest key of the scope on disk, if any.
	entries, _ := os.ReadDir(filepath.Join(f.dir, scope.id()))
	for i := len(entries) - 1; i >= 0; i-- {
		kid := strings.TrimSuffix(entries[i].Name(), ".key")
		if key, err := f.load(kid); err == nil {
			f.cur[scope], f.cache[kid] = kid, key
			return kid, key, nil
		}
	}
	var suffix [8]byte
	key := make([]byte, 32)
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", nil, err
	}
	if _, err := rand.Read(key); err != nil {
		return "", nil, err
	}
	kid := scope.id() + "-" + hex.EncodeToString(suffix[:])
	wrapped, err := f.wrap(kid, key)
	if err != nil {
		return "", nil, err
	}
	p, _ := f.path(kid)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", nil, err
	}
	if err := writeDurably(p, wrapped); err != nil {
		return "", nil, err
	}
	f.cur[scope], f.cache[kid] = kid, key
	return kid, key, nil
}

// Key implements KeyStore.
func (f *FileStore) Key(kid string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.path(kid)
	if err != nil {
		return nil, err
	}
	if !fileExists(p) {
		delete(f.cache, kid)
		return nil, fmt.Errorf("key %s: %w", kid, ErrShredded)
	}
	if k, ok := f.cache[kid]; ok {
		return k, nil
	}
	k, err := f.load(kid)
	if err != nil {
		return nil, err
	}
	f.cache[kid] = k
	return k, nil
}

func (f *FileStore) load(kid string) ([]byte, error) {
	p, err := f.path(kid)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key %s: %w", kid, ErrShredded)
	}
	if err != nil {
		return nil, err
	}
	a, err := aead(f.master)
	if err != nil {
		return nil, err
	}
	if len(raw) < a.NonceSize() {
		return nil, fmt.Errorf("key %s: truncated", kid)
	}
	key, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(kid))
	if err != nil {
		return nil, fmt.Errorf("key %s: does not unwrap with the master key: %w", kid, err)
	}
	return key, nil
}

func (f *FileStore) wrap(kid string, key []byte) ([]byte, error) {
	a, err := aead(f.master)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, key, []byte(kid)), nil
}

// Shred implements KeyStore: each key file is overwritten, synced and
// removed, then the scope's directory.
func (f *FileStore) Shred(scope Scope) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Join(f.dir, scope.id())
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var kids []string
	for _, e := range entries {
		kid := strings.TrimSuffix(e.Name(), ".key")
		p := filepath.Join(dir, e.Name())
		if info, err := os.Stat(p); err == nil {
			_ = writeDurably(p, make([]byte, info.Size()))
		}
		if err := os.Remove(p); err != nil {
			return kids, err
		}
		delete(f.cache, kid)
		kids = append(kids, kid)
	}
	delete(f.cur, scope)
	if err := os.Remove(dir); err != nil {
		return kids, err
	}
	return kids, syncDir(f.dir)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeDurably writes data to path through a synced temporary file and a
// rename, then syncs the directory.
func writeDurably(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

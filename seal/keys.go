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

	"github.com/agentledger/agentledger/internal/fsync"
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
	// opened holds, by scope id, the key ids this store handed out: what
	// values of the scope a caller may hold in the clear.
	opened map[string]map[string]bool
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
	fstore := &FileStore{dir: dir, master: master, cache: map[string][]byte{}, cur: map[Scope]string{}, opened: map[string]map[string]bool{}}
	if next, err := os.ReadFile(filepath.Join(dir, nextMaster)); err == nil {
		// A rotation was cut short: finish it.
		if _, err := fstore.rotateTo(next); err != nil {
			return nil, fmt.Errorf("key store: finish the master key's rotation: %w", err)
		}
	}
	return fstore, nil
}

// nextMaster holds the new master key while a rotation is under way.
const nextMaster = "master.next"

// Rotate replaces the master key: every data key is rewrapped under a
// fresh master key, each key file overwritten in place and synced, and
// then master.key itself is overwritten in place: no copy of the old
// master key is left in the store (a backup of DIR taken before is another
// matter). A rotation cut short is finished when the store is next
// opened. It returns how many data keys were rewrapped.
func (f *FileStore) Rotate() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := make([]byte, 32)
	if _, err := rand.Read(next); err != nil {
		return 0, err
	}
	if err := writeDurably(filepath.Join(f.dir, nextMaster), next); err != nil {
		return 0, fmt.Errorf("rotate: %w", err)
	}
	return f.rotateTo(next)
}

// rotateTo rewraps every data key under next (a key already wrapped
// under next is left as it is) and makes next the master key.
func (f *FileStore) rotateTo(next []byte) (int, error) {
	n := 0
	scopes, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, err
	}
	for _, sc := range scopes {
		if !sc.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(f.dir, sc.Name()))
		if err != nil {
			return n, err
		}
		for _, kf := range files {
			kid, ok := strings.CutSuffix(kf.Name(), ".key")
			if !ok {
				continue
			}
			if err := f.rewrap(filepath.Join(f.dir, sc.Name(), kf.Name()), kid, next); err != nil {
				return n, fmt.Errorf("rotate %s: %w", kid, err)
			}
			n++
		}
	}
	if err := overwrite(filepath.Join(f.dir, "master.key"), next); err != nil {
		return n, fmt.Errorf("rotate: %w", err)
	}
	f.master = next
	if err := os.Remove(filepath.Join(f.dir, nextMaster)); err != nil {
		return n, err
	}
	return n, fsync.Dir(f.dir)
}

// rewrap rewrites the key file at path, wrapped under the current master
// key (or already under next), wrapped under next, in place.
func (f *FileStore) rewrap(path, kid string, next []byte) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	key, err := unwrap(f.master, kid, raw)
	if err != nil {
		if _, nerr := unwrap(next, kid, raw); nerr == nil {
			return nil // rewrapped before the rotation was cut short
		}
		return err
	}
	wrapped, err := wrap(next, kid, key)
	if err != nil {
		return err
	}
	return overwrite(path, wrapped)
}

// overwrite writes data over the file at path in place (its own blocks:
// every hard link to it sees data) and syncs it.
func overwrite(path string, data []byte) error {
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = file.WriteAt(data, 0)
	if err == nil {
		err = file.Truncate(int64(len(data)))
	}
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
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
			f.handedOut(kid)
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
			f.handedOut(kid)
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
	f.handedOut(kid)
	return kid, key, nil
}

// ShreddedSince reports whether a key of scope that this store handed out
// (to seal or to open a value) has been destroyed since — by this store or
// by another process (ledger shred) — so that whatever the caller holds in
// the clear from that scope must go. It reports each shred once.
func (f *FileStore) ShreddedSince(scope Scope) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	kids := f.opened[scope.id()]
	for kid := range kids {
		if p, err := f.path(kid); err == nil && !fileExists(p) {
			delete(f.opened, scope.id())
			delete(f.cache, kid)
			if f.cur[scope] == kid {
				delete(f.cur, scope)
			}
			return true
		}
	}
	return false
}

// handedOut notes that kid was handed out. f.mu is held.
func (f *FileStore) handedOut(kid string) {
	id, _, _ := strings.Cut(kid, "-")
	if f.opened[id] == nil {
		f.opened[id] = map[string]bool{}
	}
	f.opened[id][kid] = true
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
		f.handedOut(kid)
		return k, nil
	}
	k, err := f.load(kid)
	if err != nil {
		return nil, err
	}
	f.cache[kid] = k
	f.handedOut(kid)
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
	return unwrap(f.master, kid, raw)
}

func (f *FileStore) wrap(kid string, key []byte) ([]byte, error) { return wrap(f.master, kid, key) }

// unwrap opens a key file's bytes (nonce ‖ AES-256-GCM(master, key, aad =
// kid)).
func unwrap(master []byte, kid string, raw []byte) ([]byte, error) {
	a, err := aead(master)
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

// wrap is the key file's bytes for key under master.
func wrap(master []byte, kid string, key []byte) ([]byte, error) {
	a, err := aead(master)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, key, []byte(kid)), nil
}

// Shred implements KeyStore: each key file is destroyed in place
// (destroy), then the scope's directory is removed.
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
		if err := destroy(filepath.Join(dir, e.Name())); err != nil {
			return kids, err
		}
		delete(f.cache, kid)
		kids = append(kids, kid)
	}
	delete(f.cur, scope)
	if err := os.Remove(dir); err != nil {
		return kids, err
	}
	return kids, fsync.Dir(f.dir)
}

// destroy overwrites a key file's own blocks with random bytes, syncs
// them, and removes the file. It never writes a new file over it: a
// rename would leave the old blocks to any hard link to the file (or any
// process holding it open), and the key with them.
func destroy(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("destroy %s: %w", path, err)
	}
	noise := make([]byte, info.Size())
	if _, err := rand.Read(noise); err != nil {
		return err
	}
	if err := overwrite(path, noise); err != nil {
		return fmt.Errorf("destroy %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return fsync.Dir(filepath.Dir(path))
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
	return fsync.Dir(filepath.Dir(path))
}

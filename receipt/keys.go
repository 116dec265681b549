package receipt

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The two signing keys of a data directory: one signs records and their
// receipts, the other checkpoints, so that each can be held, rotated and
// trusted on its own.
const (
	KeyRecords     = "receipt"
	KeyCheckpoints = "checkpoint"
)

// KeyFiles are where a data directory keeps its signing key name: the
// private key DATA/keys/<name>-ed25519.pem and the public key beside it.
func KeyFiles(dataDir, name string) (private, public string) {
	dir := filepath.Join(dataDir, "keys")
	return filepath.Join(dir, name+"-ed25519.pem"), filepath.Join(dir, name+"-ed25519.pub.pem")
}

// LoadKey reads an Ed25519 private key (PKCS#8 PEM) from path.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// DataDirKey loads the signing key name of a data directory, generating it
// on first use (0600, in a 0700 directory), and writes its public key
// beside it, saying the key's purpose (PurposeHeader). It returns the key
// and the public key's path.
func DataDirKey(dataDir, name string) (ed25519.PrivateKey, string, error) {
	priv, pub := KeyFiles(dataDir, name)
	if _, err := os.Stat(priv); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(priv), 0o700); err != nil {
			return nil, "", fmt.Errorf("%s key: %w", name, err)
		}
		key, err := GenerateKey()
		if err != nil {
			return nil, "", fmt.Errorf("%s key: %w", name, err)
		}
		if err := os.WriteFile(priv, key, 0o600); err != nil {
			return nil, "", fmt.Errorf("%s key: %w", name, err)
		}
	}
	k, err := LoadKey(priv)
	if err != nil {
		return nil, "", fmt.Errorf("%s key: %w", name, err)
	}
	purpose := PurposeRecords
	if name == KeyCheckpoints {
		purpose = PurposeCheckpoints
	}
	if err := os.WriteFile(pub, NewSigner(k).PublicKeyPEMFor(purpose), 0o644); err != nil {
		return nil, "", fmt.Errorf("%s public key: %w", name, err)
	}
	return k, pub, nil
}

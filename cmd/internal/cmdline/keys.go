package cmdline

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// Signer loads the key that signs the engine's records (verdicts with
// their receipts, resolutions, failures, rejections, checkpoint records)
// from path, or, when path is empty, from (or, on first run, into)
// dataDir/keys/receipt-ed25519.pem, writing the public key beside it. It
// returns the signer and the public key's path.
func Signer(path, dataDir string) (*receipt.Signer, string, error) {
	k, pubPath, err := SigningKey(path, dataDir, KeyReceipts)
	if err != nil {
		return nil, "", err
	}
	return receipt.NewSigner(k), pubPath, nil
}

// KeyStore opens the sealing key store of a data directory,
// DATA/keys/sealing (created on first use).
func KeyStore(dataDir string) (*seal.FileStore, error) {
	return seal.OpenFileStore(filepath.Join(dataDir, "keys", "sealing"))
}

// Sealer is the sealer of an engine recording into dataDir under manifest m.
func Sealer(dataDir string, m *manifest.Manifest) (*seal.Sealer, error) {
	keys, err := KeyStore(dataDir)
	if err != nil {
		return nil, err
	}
	return &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(m)}, nil
}

// The two signing keys of a data directory (see receipt.DataDirKey).
const (
	KeyReceipts    = receipt.KeyRecords
	KeyCheckpoints = receipt.KeyCheckpoints
)

// SigningKey loads the Ed25519 signing key at path (a bad file is exit 2),
// or, when path is empty, the data directory's key name, generated on
// first use (receipt.DataDirKey). It returns the key and, for the data
// directory's, its public key's path.
func SigningKey(path, dataDir, name string) (ed25519.PrivateKey, string, error) {
	if path == "" {
		return receipt.DataDirKey(dataDir, name)
	}
	k, err := receipt.LoadKey(path)
	if err != nil {
		return nil, "", Usage(fmt.Errorf("%s key: %w", name, err))
	}
	return k, "", nil
}

// CheckpointKeys reads the checkpoint public keys in the PEM file pub;
// a file that is missing or holds none gives an empty ring (checkpoints
// are then read unchecked and say so), and a key the file marks as a
// records key is left out: it never opens a checkpoint.
func CheckpointKeys(pub string) receipt.Keyring {
	raw, err := os.ReadFile(pub)
	if err != nil {
		return receipt.Keyring{}
	}
	var keys receipt.Keys
	if keys.Add(raw, receipt.PurposeCheckpoints) != nil {
		return receipt.Keyring{}
	}
	return keys.Checkpoints
}

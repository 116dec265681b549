package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// A host's HTTP hooks reach the local engine on a loopback port, each with
// a token of its own. `engine install --transport http` sets both up in the
// data directory; the local engine serves them while it runs (and then
// does not exit idle: an HTTP hook cannot start it).
const (
	httpHooksFile  = "http-hooks.json"            // {"listen": "127.0.0.1:PORT"}
	httpTokensFile = "keys/http-hook-tokens.json" // engine serve --tokens format
)

type httpHooks struct {
	Listen string `json:"listen"`
}

// readHTTPHooks reads the data directory's HTTP hook listener, if one is
// set up: its address and tokens file.
func readHTTPHooks(dataDir string) (listen, tokens string, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dataDir, httpHooksFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	var h httpHooks
	if err := json.Unmarshal(raw, &h); err != nil || h.Listen == "" {
		return "", "", false, fmt.Errorf("%s: want {\"listen\": \"127.0.0.1:PORT\"}", filepath.Join(dataDir, httpHooksFile))
	}
	return h.Listen, filepath.Join(dataDir, httpTokensFile), true, nil
}

// newHTTPHookToken sets up the data directory's HTTP hook listener (a free
// loopback port, the first time) and adds a token for tenant to it. It
// returns the token and the listener's address.
func newHTTPHookToken(dataDir, tenant string) (token, listen string, err error) {
	if err := os.MkdirAll(filepath.Join(dataDir, "keys"), 0o700); err != nil {
		return "", "", err
	}
	listen, tokensPath, ok, err := readHTTPHooks(dataDir)
	if err != nil {
		return "", "", err
	}
	if !ok {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", fmt.Errorf("find a free loopback port: %w", err)
		}
		listen = ln.Addr().String()
		ln.Close()
		raw, _ := json.Marshal(httpHooks{Listen: listen})
		if err := os.WriteFile(filepath.Join(dataDir, httpHooksFile), append(raw, '\n'), 0o600); err != nil {
			return "", "", err
		}
		tokensPath = filepath.Join(dataDir, httpTokensFile)
	}
	var f struct {
		Tokens []map[string]string `json:"tokens"`
	}
	if raw, err := os.ReadFile(tokensPath); err == nil {
		if err := json.Unmarshal(raw, &f); err != nil {
			return "", "", fmt.Errorf("%s: %w", tokensPath, err)
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	f.Tokens = append(f.Tokens, map[string]string{"sha256": hex.EncodeToString(sum[:]), "tenant": tenant, "name": "http-hook-" + hex.EncodeToString(sum[:4])})
	raw, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(tokensPath, append(raw, '\n'), 0o600); err != nil {
		return "", "", err
	}
	return token, listen, nil
}

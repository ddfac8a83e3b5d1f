package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// VAPIDKey is an application server's P-256 key pair (RFC 8292). Its
// public half is given to browsers as applicationServerKey when they
// subscribe; its private half signs the VAPID token of every push.
type VAPIDKey struct {
	private *ecdsa.PrivateKey
}

// ErrBadKey reports a VAPID private key that cannot be read.
var ErrBadKey = errors.New("webpush: bad VAPID key")

// GenerateVAPIDKey returns a new random key pair.
func GenerateVAPIDKey() (*VAPIDKey, error) {
	private, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &VAPIDKey{private: private}, nil
}

// ParseVAPIDKey reads a private key written by MarshalPEM (a PKCS #8 or a
// SEC 1 "EC PRIVATE KEY" PEM block) or by PrivateKeyBase64 (the 32-byte
// scalar in base64url, padded or not), the form most Web Push libraries
// print and configuration files hold.
func ParseVAPIDKey(text string) (*VAPIDKey, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "-----BEGIN") {
		return parsePEMKey([]byte(text))
	}
	raw, err := decodeBase64URL(text)
	if err != nil {
		return nil, fmt.Errorf("%w: neither PEM nor base64url: %v", ErrBadKey, err)
	}
	private, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return &VAPIDKey{private: private}, nil
}

// parsePEMKey reads the first PEM block of data as a P-256 private key.
func parsePEMKey(data []byte) (*VAPIDKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrBadKey)
	}
	var parsed any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: PEM block %q is not a private key", ErrBadKey, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	private, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || private.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: not a P-256 key", ErrBadKey)
	}
	return &VAPIDKey{private: private}, nil
}

// LoadOrCreateVAPIDKey reads the PEM key in the file at path, or, if there
// is no such file, generates a key and writes it there (mode 0600) so that
// the server keeps the same key, and its subscriptions, across restarts.
func LoadOrCreateVAPIDKey(path string) (*VAPIDKey, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return ParseVAPIDKey(string(data))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key, err := GenerateVAPIDKey()
	if err != nil {
		return nil, err
	}
	return key, key.save(path)
}

// save writes the key to a new file at path, failing if one exists.
func (k *VAPIDKey) save(path string) error {
	data, err := k.MarshalPEM()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MarshalPEM returns the private key as a PKCS #8 "PRIVATE KEY" PEM block.
func (k *VAPIDKey) MarshalPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.private)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// PrivateKeyBase64 returns the 32-byte private scalar in unpadded
// base64url. It is a secret: keep it out of logs.
func (k *VAPIDKey) PrivateKeyBase64() string {
	raw, err := k.private.Bytes()
	if err != nil {
		panic(err) // unreachable: the key is always a valid P-256 key
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// PublicKey returns the browser's applicationServerKey: the uncompressed
// public point (65 bytes, starting 0x04) in unpadded base64url. It is also
// the k parameter of the VAPID authorization.
func (k *VAPIDKey) PublicKey() string {
	raw, err := k.private.PublicKey.Bytes()
	if err != nil {
		panic(err) // unreachable: the key is always a valid P-256 key
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeBase64URL decodes base64url text with or without its padding.
func decodeBase64URL(text string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(text, "="))
}

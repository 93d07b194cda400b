package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
)

// SigningKeyBits is the RSA modulus size GenerateKey uses. 2048 bits keeps
// verification inside the latency budget while meeting current guidance.
const SigningKeyBits = 2048

// GenerateKey creates a new RSA signing key for the built-in identity
// provider. The caller persists it (with the secret box) via
// MarshalPrivateKeyPEM.
func GenerateKey() (*rsa.PrivateKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, SigningKeyBits)
	if err != nil {
		return nil, fmt.Errorf("auth: generate signing key: %w", err)
	}
	return k, nil
}

// MarshalPrivateKeyPEM encodes key as a PKCS #8 "PRIVATE KEY" PEM block.
func MarshalPrivateKeyPEM(key *rsa.PrivateKey) ([]byte, error) {
	if key == nil {
		return nil, errors.New("auth: marshal signing key: nil key")
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("auth: marshal signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes an RSA key written by MarshalPrivateKeyPEM
// (PKCS #1 "RSA PRIVATE KEY" blocks are accepted too). Keys shorter than
// 2048 bits are refused. Error messages never include key material.
func ParsePrivateKeyPEM(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("auth: parse signing key: no PEM block")
	}
	var key *rsa.PrivateKey
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("auth: parse signing key: invalid PKCS #8 data")
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("auth: parse signing key: %T is not an RSA key", k)
		}
		key = rk
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("auth: parse signing key: invalid PKCS #1 data")
		}
		key = k
	default:
		return nil, fmt.Errorf("auth: parse signing key: unexpected PEM type %q", block.Type)
	}
	if key.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("auth: parse signing key: %d-bit key is too short", key.N.BitLen())
	}
	return key, nil
}

// KeyID returns the RFC 7638 SHA-256 thumbprint of pub, base64url encoded.
// Deriving the kid from the key makes rotation safe: a new key always gets a
// new kid, so verifiers notice it and refresh.
func KeyID(pub *rsa.PublicKey) (string, error) {
	if pub == nil {
		return "", errors.New("auth: key id: nil key")
	}
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("auth: key id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

package wg

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// KeySize is the size of a WireGuard key (Curve25519 private, public or preshared), in bytes.
const KeySize = 32

// Key is a WireGuard key: a Curve25519 private or public key, or a preshared key. Its text form
// is standard base64 (44 characters), the form `wg genkey`, `wg pubkey` and wg-quick files use.
type Key [KeySize]byte

// ParseKey decodes a key from its base64 text form. It refuses anything that is not exactly
// 32 bytes of standard base64 and names the expected form in the error.
func ParseKey(s string) (Key, error) {
	var k Key
	if len(s) != base64.StdEncoding.EncodedLen(KeySize) {
		return k, fmt.Errorf("wg: key of %d characters: a key is %d characters of base64 (as `wg genkey` prints)", len(s), base64.StdEncoding.EncodedLen(KeySize))
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return k, fmt.Errorf("wg: key is not valid base64 (as `wg genkey` prints): %w", err)
	}
	if len(b) != KeySize {
		return k, fmt.Errorf("wg: key decodes to %d bytes, want %d", len(b), KeySize)
	}
	copy(k[:], b)
	return k, nil
}

// String returns the key in base64.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// IsZero reports whether every byte of the key is zero (an unset key).
func (k Key) IsZero() bool { return k == Key{} }

// hex returns the key in the lower-case hex form WireGuard's configuration protocol uses.
func (k Key) hex() string { return hex.EncodeToString(k[:]) }

// GeneratePrivateKey returns a new random private key from crypto/rand.
func GeneratePrivateKey() (Key, error) {
	var k Key
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return k, fmt.Errorf("wg: generate private key: %w", err)
	}
	copy(k[:], priv.Bytes())
	return k, nil
}

// PublicKey returns the public key of private key k (X25519 with the base point, computed by
// the standard library's crypto/ecdh). It fails for the zero key.
func (k Key) PublicKey() (Key, error) {
	var pub Key
	if k.IsZero() {
		return pub, fmt.Errorf("wg: the private key is all zero: generate one (`wg genkey`, GeneratePrivateKey)")
	}
	priv, err := ecdh.X25519().NewPrivateKey(k[:])
	if err != nil {
		return pub, fmt.Errorf("wg: private key: %w", err)
	}
	copy(pub[:], priv.PublicKey().Bytes())
	return pub, nil
}

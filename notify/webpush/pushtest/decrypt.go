package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// headerLength is the length of an aes128gcm header without its key id:
// salt (16), record size (4) and key id length (1) (RFC 8188 section 2.1).
const headerLength = 16 + 4 + 1

// tagLength is the length of an AES-GCM authentication tag.
const tagLength = 16

// Delimiters that end the plaintext of a record before its zero padding
// (RFC 8188 section 2).
const (
	delimiterRecord     = 1
	delimiterLastRecord = 2
)

// decrypt decodes a push message body as a user agent does (RFC 8291
// section 3): the key id of the aes128gcm header is the application
// server's ephemeral public key; the shared ECDH secret is mixed with the
// authentication secret into the input keying material, from which the
// salt of the header gives the content encryption key and nonce; the
// message is a single record whose plaintext ends with the last-record
// delimiter and zero padding.
func decrypt(body []byte, uaKey *ecdh.PrivateKey, authSecret []byte) ([]byte, error) {
	if len(body) < headerLength {
		return nil, errors.New("body shorter than an aes128gcm header")
	}
	salt := body[:16]
	recordSize := binary.BigEndian.Uint32(body[16:20])
	idLength := int(body[20])
	if recordSize < tagLength+2 {
		return nil, fmt.Errorf("record size %d is too small", recordSize)
	}
	if idLength != 65 || len(body) < headerLength+idLength {
		return nil, fmt.Errorf("key id of %d bytes is not a P-256 public key", idLength)
	}
	asKey, err := ecdh.P256().NewPublicKey(body[headerLength : headerLength+idLength])
	if err != nil {
		return nil, fmt.Errorf("key id: %v", err)
	}
	record := body[headerLength+idLength:]
	if uint64(len(record)) > uint64(recordSize) {
		return nil, errors.New("more than one record")
	}
	key, nonce, err := contentKeys(uaKey, asKey, authSecret, salt)
	if err != nil {
		return nil, err
	}
	padded, err := openRecord(key, nonce, record)
	if err != nil {
		return nil, err
	}
	return unpad(padded)
}

// contentKeys derives the content encryption key and the nonce of a push
// message (RFC 8291 section 3.4, RFC 8188 section 2.2 and 2.3).
func contentKeys(uaKey *ecdh.PrivateKey, asKey *ecdh.PublicKey, authSecret, salt []byte) (key, nonce []byte, err error) {
	ecdhSecret, err := uaKey.ECDH(asKey)
	if err != nil {
		return nil, nil, err
	}
	prkKey, err := hkdf.Extract(sha256.New, ecdhSecret, authSecret)
	if err != nil {
		return nil, nil, err
	}
	keyInfo := "WebPush: info\x00" + string(uaKey.PublicKey().Bytes()) + string(asKey.Bytes())
	ikm, err := hkdf.Expand(sha256.New, prkKey, keyInfo, 32)
	if err != nil {
		return nil, nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, err
	}
	if key, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16); err != nil {
		return nil, nil, err
	}
	nonce, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	return key, nonce, err
}

// openRecord decrypts and authenticates the first (sequence number 0, so
// the nonce is used as derived) and only record.
func openRecord(key, nonce, record []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("record does not decrypt: %v", err)
	}
	return plain, nil
}

// unpad removes the zero padding and the delimiter, which must mark the
// last record.
func unpad(padded []byte) ([]byte, error) {
	end := len(padded) - 1
	for end >= 0 && padded[end] == 0 {
		end--
	}
	if end < 0 {
		return nil, errors.New("no padding delimiter")
	}
	switch padded[end] {
	case delimiterLastRecord:
		return padded[:end], nil
	case delimiterRecord:
		return nil, errors.New("delimiter marks a record that is not the last")
	default:
		return nil, fmt.Errorf("padding delimiter is %#x, not 2", padded[end])
	}
}

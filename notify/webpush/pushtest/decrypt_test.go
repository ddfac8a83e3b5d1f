package pushtest

import (
	"crypto/ecdh"
	"strings"
	"testing"
)

// The example of RFC 8291 Appendix A.
const (
	rfcPlaintext = "When I grow up, I want to be a watermelon"
	rfcUAPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcAuth      = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcBody      = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

// rfcExample returns the user agent's key, auth secret and body of the
// RFC 8291 example.
func rfcExample(t *testing.T) (*ecdh.PrivateKey, []byte, []byte) {
	t.Helper()
	rawKey, err1 := decodeBase64URL(rfcUAPrivate)
	auth, err2 := decodeBase64URL(rfcAuth)
	body, err3 := decodeBase64URL(rfcBody)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	key, err := ecdh.P256().NewPrivateKey(rawKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, auth, body
}

func TestDecryptRFC8291Example(t *testing.T) {
	key, auth, body := rfcExample(t)
	plain, err := decrypt(body, key, auth)
	if err != nil {
		t.Fatal(err)
	}
	if string(plain) != rfcPlaintext {
		t.Fatalf("plaintext = %q, want %q", plain, rfcPlaintext)
	}
}

func TestDecryptRefusesDamagedMessages(t *testing.T) {
	key, auth, body := rfcExample(t)
	flipped := append([]byte(nil), body...)
	flipped[len(flipped)-20] ^= 1
	otherAuth := append([]byte(nil), auth...)
	otherAuth[0] ^= 1
	otherKey, _ := ecdh.P256().GenerateKey(nil)
	shortRecordSize := append([]byte(nil), body...)
	shortRecordSize[18], shortRecordSize[19] = 0, 17 // record size 17
	cases := []struct {
		name string
		body []byte
		key  *ecdh.PrivateKey
		auth []byte
		want string
	}{
		{"flipped ciphertext bit", flipped, key, auth, "does not decrypt"},
		{"other auth secret", body, key, otherAuth, "does not decrypt"},
		{"other user agent key", body, otherKey, auth, "does not decrypt"},
		{"truncated header", body[:20], key, auth, "shorter than"},
		{"no key id", body[:21], key, auth, "not a P-256 public key"},
		{"record size too small", shortRecordSize, key, auth, "too small"},
	}
	for _, c := range cases {
		if _, err := decrypt(c.body, c.key, c.auth); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestUnpad(t *testing.T) {
	if got, err := unpad([]byte("hi\x02\x00\x00")); err != nil || string(got) != "hi" {
		t.Errorf("unpad = %q, %v", got, err)
	}
	if got, err := unpad([]byte("\x02")); err != nil || len(got) != 0 {
		t.Errorf("unpad of an empty message = %q, %v", got, err)
	}
	for _, bad := range []string{"", "\x00\x00", "hi\x01\x00", "hi\x03"} {
		if _, err := unpad([]byte(bad)); err == nil {
			t.Errorf("unpad(%q) accepted", bad)
		}
	}
}

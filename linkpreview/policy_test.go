package linkpreview

import (
	"errors"
	"testing"
)

func TestControlChecksDialledAddress(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "10.1.2.3:80", "169.254.169.254:80", "[::ffff:127.0.0.1]:80", "0.0.0.0:80", "not-an-address"} {
		if err := f.control("tcp", addr, nil); !errors.Is(err, ErrRefused) {
			t.Errorf("control(%s) = %v, want ErrRefused", addr, err)
		}
	}
	if err := f.control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("control of a public address: %v", err)
	}
}

package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestIsPublic(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "169.254.169.254", "169.254.0.1", "0.0.0.0", "0.1.2.3", "::",
		"100.64.0.1", "100.127.255.255", "224.0.0.1", "239.255.255.250", "255.255.255.255",
		"240.0.0.1", "192.0.2.1", "198.18.0.1", "fc00::1", "fd00::2", "fe80::1",
		"fe80::1%eth0", "ff02::1", "ff05::2", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:100.64.0.1", "::ffff:192.0.2.1", "::127.0.0.1", "64:ff9b::a00:1",
		"2002:a00:1::1", "2001:db8::1", "2001::1", "fec0::1",
	}
	for _, s := range refused {
		if IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = true, want false", s)
		}
	}
	allowed := []string{"8.8.8.8", "93.184.216.34", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"}
	for _, s := range allowed {
		if !IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = false, want true", s)
		}
	}
}

func TestPublicOnlyAllowLoopback(t *testing.T) {
	p := PublicOnly(true)
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "8.8.8.8"} {
		if !p(netip.MustParseAddr(s)) {
			t.Errorf("with loopback allowed, %s refused", s)
		}
	}
	for _, s := range []string{"10.0.0.1", "169.254.169.254", "0.0.0.0", "::", "fe80::1", "192.168.0.1", "fd00::1"} {
		if p(netip.MustParseAddr(s)) {
			t.Errorf("with loopback allowed, %s allowed too", s)
		}
	}
	if PublicOnly(false)(netip.MustParseAddr("127.0.0.1")) {
		t.Error("without loopback allowed, 127.0.0.1 allowed")
	}
}

func TestControlChecksDialledAddress(t *testing.T) {
	var d Dialer
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "10.1.2.3:80", "169.254.169.254:80", "[::ffff:127.0.0.1]:80", "0.0.0.0:80", "not-an-address"} {
		if err := d.Control("tcp", addr, nil); !errors.Is(err, ErrRefused) {
			t.Errorf("Control(%s) = %v, want ErrRefused", addr, err)
		}
	}
	if err := d.Control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("Control of a public address: %v", err)
	}
}

// TestDialRefusesNameWithOneBadAddress checks that a name is refused when
// any of its addresses is refused, before anything is dialled.
func TestDialRefusesNameWithOneBadAddress(t *testing.T) {
	d := Dialer{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("10.0.0.1")}, nil
	}}
	if _, err := d.DialContext(context.Background(), "tcp", "mixed.test:443"); !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
}

// TestDialLoopback checks that the loopback policy lets a local connection
// through and the default policy refuses the same one.
func TestDialLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	var strict Dialer
	if _, err := strict.DialContext(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, ErrRefused) {
		t.Fatalf("default policy: err = %v, want ErrRefused", err)
	}
	loose := Dialer{Allowed: PublicOnly(true)}
	conn, err := loose.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("loopback allowed: %v", err)
	}
	conn.Close()
}

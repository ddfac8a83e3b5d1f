package auth

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"
	"unique"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// MaxDeviceName caps the length of a device's name, in characters.
const MaxDeviceName = 64

// SignIn is how a session began, what its user's list of devices shows.
type SignIn struct {
	// Method is store.SignInPassword, store.SignInPasskey or
	// store.SignInOIDC.
	Method string
	// Device names the client; empty: a summary of the request's
	// User-Agent.
	Device string
	// TwoFactor reports whether the sign-in proved a second factor.
	TwoFactor bool
}

type userAgentKey struct{}

// withUserAgent returns ctx carrying the request's User-Agent header, and
// its Origin (see withOrigin). Both are interned: a websocket keeps them
// for its life, and clients share a few.
func withUserAgent(ctx context.Context, r *http.Request) context.Context {
	ctx = withOrigin(ctx, r.Header.Get("Origin"))
	if ua := r.Header.Get("User-Agent"); ua != "" {
		return context.WithValue(ctx, userAgentKey{}, unique.Make(ua))
	}
	return ctx
}

// internedFrom returns the interned string ctx holds under key, or "".
func internedFrom(ctx context.Context, key any) string {
	if h, ok := ctx.Value(key).(unique.Handle[string]); ok {
		return h.Value()
	}
	return ""
}

// deviceName is the name a session started in ctx shows: given, if not
// empty, or a summary of the User-Agent, cut to MaxDeviceName characters.
func deviceName(ctx context.Context, given string) string {
	name := strings.TrimSpace(given)
	if name == "" {
		name = DescribeUserAgent(internedFrom(ctx, userAgentKey{}))
	}
	return truncate(name, MaxDeviceName)
}

// ValidateDeviceName checks a device name a client gives.
func ValidateDeviceName(name string) error {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxDeviceName {
		return store.Invalidf("invalid device name: at most %d characters", MaxDeviceName)
	}
	return nil
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// DescribeUserAgent summarises a User-Agent header as people name their
// devices: "Firefox on Linux"; the product of a client that is no browser
// ("chatql-cli/1.2"); "unknown device" for none.
func DescribeUserAgent(ua string) string {
	if ua == "" {
		return "unknown device"
	}
	browser := ""
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"Chromium/", "Chromium"},
		{"HeadlessChrome/", "Chrome"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	system := ""
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"CrOS", "ChromeOS"},
		{"Windows", "Windows"}, {"Mac OS X", "macOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			system = o.name
			break
		}
	}
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	}
	product, _, _ := strings.Cut(ua, " ")
	return product
}

// clientAddress is the address a session started or refreshed in ctx
// shows.
func clientAddress(ctx context.Context) string {
	return ratelimit.ClientAddressFrom(ctx)
}

package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/killrchat/chatql/server"
)

// oidcProvider is a small but real OpenID Connect provider on loopback:
// discovery, a JWKS, the authorization endpoint (which signs in whoever
// the test says, at once) and the token endpoint (client secret, single-use
// codes, PKCE S256), issuing ID tokens signed RS256 with its own key.
type oidcProvider struct {
	*httptest.Server
	key, forger *rsa.PrivateKey

	mu    sync.Mutex
	user  map[string]any // the claims of who signs in next
	forge bool           // sign ID tokens with a key not in the JWKS
	// interactive: the authorization endpoint shows a sign-in form
	interactive bool
	codes       map[string]authCode
	issued      int
}

type authCode struct {
	nonce, challenge, redirect string
	claims                     map[string]any
}

const (
	oidcClientID     = "chatql-test"
	oidcClientSecret = "s3cret-of-the-client"
)

func newOIDCProvider(t *testing.T) *oidcProvider {
	t.Helper()
	p := &oidcProvider{codes: map[string]authCode{}}
	var err error
	if p.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.forger, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
			"jwks_uri": p.URL + "/jwks", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	// The authorization endpoint signs in whoever the test said at once;
	// an interactive provider (the browser's) shows a sign-in page first,
	// a form whose username names who signs in.
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != oidcClientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		interactive, claims := p.interactive, p.user
		p.mu.Unlock()
		if interactive {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = signInPage.Execute(w, q)
			return
		}
		p.authorize(w, r, q, claims)
	})
	mux.HandleFunc("POST /authorize", func(w http.ResponseWriter, r *http.Request) {
		name := r.PostFormValue("username")
		if name == "" {
			http.Error(w, "no username", http.StatusBadRequest)
			return
		}
		p.authorize(w, r, r.PostForm, map[string]any{"sub": "idp-" + name, "preferred_username": name, "email": name + "@idp.example", "email_verified": true})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.FormValue("client_id"), r.FormValue("client_secret")
		}
		p.mu.Lock()
		c, found := p.codes[r.FormValue("code")]
		delete(p.codes, r.FormValue("code")) // a code works once
		forge := p.forge
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		switch {
		case id != oidcClientID || secret != oidcClientSecret:
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		case !found || r.FormValue("redirect_uri") != c.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "invalid_grant"})
			return
		}
		claims := map[string]any{"iss": p.URL, "aud": oidcClientID, "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(), "nonce": c.nonce}
		for k, v := range c.claims {
			claims[k] = v
		}
		key := p.key
		if forge {
			key = p.forger
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		payload, _ := json.Marshal(claims)
		jws, err := signer.Sign(payload)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		idToken, _ := jws.CompactSerialize()
		writeJSON(w, map[string]any{"access_token": "at-" + r.FormValue("code"), "token_type": "Bearer", "expires_in": 300, "id_token": idToken})
	})
	return p
}

// authorize issues a code for claims and sends the browser back with it.
func (p *oidcProvider) authorize(w http.ResponseWriter, r *http.Request, q url.Values, claims map[string]any) {
	p.mu.Lock()
	p.issued++
	code := base64.RawURLEncoding.EncodeToString([]byte(time.Now().String()))
	p.codes[code] = authCode{nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), claims: claims}
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// signInPage is the interactive provider's sign-in page: the request's
// parameters ride along in hidden fields.
var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test provider: sign in</title></head>
<body><main><h1>Test provider</h1>
<form method="post" action="/authorize">
{{range $k, $v := .}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">
{{end}}<label for="username">Username</label> <input id="username" name="username" required>
<button type="submit">Sign in</button>
</form></main></body></html>`))

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (p *oidcProvider) signInAs(claims map[string]any, forge bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user, p.forge = claims, forge
}

const (
	beginOIDCQ  = `mutation { beginOidcSignIn { url flow } }`
	finishOIDCQ = `mutation($f: String!, $c: String!, $s: String!) { finishOidcSignIn(flow: $f, code: $c, state: $s) { token refreshToken user { login firstname lastname email emailVerified } } }`
	linkOIDCQ   = `mutation($f: String!, $c: String!, $s: String!) { linkOidcIdentity(flow: $f, code: $c, state: $s) { issuer subject email } }`
	identitiesQ = `{ identities { issuer subject email linkedAt } }`
)

// atProvider begins a sign-in, follows the browser to the provider and
// returns the flow, and the code and state the provider sent back.
func atProvider(t *testing.T, ts *testServer) (flow, code, state string) {
	t.Helper()
	var begun struct{ BeginOidcSignIn struct{ URL, Flow string } }
	mustDo(t, ts.Client, beginOIDCQ, nil, &begun)
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(begun.BeginOidcSignIn.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("the provider answered %s, want a redirect back", resp.Status)
	}
	return begun.BeginOidcSignIn.Flow, back.Query().Get("code"), back.Query().Get("state")
}

type oidcSignedIn struct {
	Token, RefreshToken string
	User                struct {
		Login, Firstname, Lastname, Email string
		EmailVerified                     bool
	}
}

// signInAtProvider signs in through the provider, as whoever it signs in.
func signInAtProvider(t *testing.T, ts *testServer) oidcSignedIn {
	t.Helper()
	flow, code, state := atProvider(t, ts)
	return finishOIDC(t, ts, flow, code, state)
}

func finishOIDC(t *testing.T, ts *testServer, flow, code, state string) oidcSignedIn {
	t.Helper()
	var out struct{ FinishOidcSignIn oidcSignedIn }
	mustDo(t, ts.Client, finishOIDCQ, map[string]any{"f": flow, "c": code, "s": state}, &out)
	return out.FinishOidcSignIn
}

// TestOIDCSignIn: sign-in with a real OpenID Connect provider on loopback
// (authorization code, PKCE, an RS256 ID token checked against its JWKS).
// An identity seen first gets an account of its own, never an existing one
// of the same name or email; a signed-in user links another identity to
// their account, which then signs them in; a forged ID token, a replayed
// code and a wrong state are refused.
func TestOIDCSignIn(t *testing.T) { forEachStore(t, testOIDCSignIn) }

func testOIDCSignIn(t *testing.T, cfg server.Config) {
	prov := newOIDCProvider(t)
	cfg.OIDC.Issuer, cfg.OIDC.ClientID, cfg.OIDC.ClientSecret = prov.URL, oidcClientID, oidcClientSecret
	cfg.OIDC.RedirectURL = "http://localhost:1/?oidc"
	ts := startServer(t, cfg)
	ts.user(t, "alice")
	var offered struct {
		OidcProvider *struct{ Name, Issuer string }
	}
	mustDo(t, ts.Client, `{ oidcProvider { name issuer } }`, nil, &offered)
	if p := offered.OidcProvider; p == nil || p.Issuer != prov.URL || p.Name != strings.TrimPrefix(prov.URL, "http://") {
		t.Errorf("oidcProvider = %+v, want the provider, named by its host", p)
	}

	// Carol's first sign-in makes her account, named after her claims.
	prov.signInAs(map[string]any{"sub": "carol-1", "preferred_username": "Carol", "given_name": "Carol", "family_name": "Lewis", "email": "carol@example.com", "email_verified": true}, false)
	flow, code, state := atProvider(t, ts)
	wantCode(t, ts.Client, "UNAUTHENTICATED", finishOIDCQ, map[string]any{"f": flow, "c": code, "s": "not-the-state"})
	carol := finishOIDC(t, ts, flow, code, state)
	if u := carol.User; u.Login != "carol" || u.Firstname != "Carol" || u.Lastname != "Lewis" || u.Email != "carol@example.com" || !u.EmailVerified {
		t.Errorf("first sign-in made %+v, want carol's account from her claims, her address verified as the provider says", u)
	}
	wantMe(t, ts, carol.Token, true)
	// The code works once.
	wantCode(t, ts.Client, "UNAUTHENTICATED", finishOIDCQ, map[string]any{"f": flow, "c": code, "s": state})
	// Again: the same account, and no password signs it in.
	again := signInAtProvider(t, ts)
	if again.User.Login != "carol" {
		t.Errorf("second sign-in = %+v, want carol", again.User)
	}
	for _, s := range listSessions(t, ts.Client.WithToken(again.Token)) {
		if s.SignInMethod != "OIDC" {
			t.Errorf("carol's session %+v, want an OIDC sign-in", s)
		}
	}

	// An identity called alice, with alice's email, is not alice's
	// account: it gets one of its own.
	prov.signInAs(map[string]any{"sub": "mallory-1", "preferred_username": "alice", "email": "alice@example.com", "email_verified": true}, false)
	other := signInAtProvider(t, ts)
	if other.User.Login == "alice" || other.User.Login != "alice-2" {
		t.Errorf("an identity named alice signed in as %q, want a new account alice-2", other.User.Login)
	}

	// Alice links her own identity, signed in; it then signs her in.
	prov.signInAs(map[string]any{"sub": "alice-at-idp", "email": "a@idp.example"}, false)
	a := login(t, ts, "alice", "password-alice")
	ac := ts.Client.WithToken(a.Token)
	f, c, s := atProvider(t, ts)
	wantCode(t, ts.Client, "UNAUTHENTICATED", linkOIDCQ, map[string]any{"f": f, "c": c, "s": s})
	f, c, s = atProvider(t, ts)
	mustDo(t, ac, linkOIDCQ, map[string]any{"f": f, "c": c, "s": s}, nil)
	var ids struct {
		Identities []struct{ Issuer, Subject, Email string }
	}
	mustDo(t, ac, identitiesQ, nil, &ids)
	if len(ids.Identities) != 1 || ids.Identities[0].Subject != "alice-at-idp" || ids.Identities[0].Issuer != prov.URL {
		t.Errorf("alice's identities = %+v, want the one she linked", ids.Identities)
	}
	if got := signInAtProvider(t, ts); got.User.Login != "alice" {
		t.Errorf("alice's identity signed in %q, want alice", got.User.Login)
	}
	// Linked already: carol cannot take it.
	f, c, s = atProvider(t, ts)
	wantCode(t, ts.Client.WithToken(carol.Token), "CONFLICT", linkOIDCQ, map[string]any{"f": f, "c": c, "s": s})

	// An ID token signed with a key not in the provider's JWKS is refused.
	prov.signInAs(map[string]any{"sub": "alice-at-idp"}, true)
	f, c, s = atProvider(t, ts)
	wantCode(t, ts.Client, "UNAUTHENTICATED", finishOIDCQ, map[string]any{"f": f, "c": c, "s": s})
	// A flow that is not the server's is refused.
	wantCode(t, ts.Client, "UNAUTHENTICATED", finishOIDCQ, map[string]any{"f": "forged", "c": "x", "s": "y"})
}

// TestOIDCNotConfigured: with no provider, the flow is NOT_FOUND.
func TestOIDCNotConfigured(t *testing.T) {
	ts := startServer(t, testConfig(t))
	wantCode(t, ts.Client, "NOT_FOUND", beginOIDCQ, nil)
	var offered struct{ OidcProvider *struct{ Name string } }
	mustDo(t, ts.Client, `{ oidcProvider { name } }`, nil, &offered)
	if offered.OidcProvider != nil {
		t.Errorf("oidcProvider with none configured = %+v, want null", offered.OidcProvider)
	}
}

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/killrchat/chatql/store"
)

// OIDCFlowTTL is how long a sign-in at the OpenID Connect provider may take.
const OIDCFlowTTL = 10 * time.Minute

// OIDCConfig configures sign-in with an OpenID Connect provider.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL: its discovery document is at
	// Issuer/.well-known/openid-configuration.
	Issuer string
	// ClientID and ClientSecret are this server's registration at the
	// provider (a confidential client).
	ClientID, ClientSecret string
	// RedirectURL is where the provider sends the browser back with the
	// code: the web app's page, registered at the provider.
	RedirectURL string
	// HTTPClient reaches the provider (http.DefaultClient if nil).
	HTTPClient *http.Client
}

// OIDC runs the authorization code flow with PKCE (S256) against one
// provider, and verifies the ID token it returns (go-oidc: its signature
// by a key of the provider's JWKS, its issuer, audience, expiry and
// nonce). The flow's state (the state parameter, the nonce and the PKCE
// verifier) travels with the client, sealed by the server, for
// OIDCFlowTTL: any instance finishes what another began. The provider's
// discovery document is read at the first sign-in, and again after a
// failure.
type OIDC struct {
	cfg      OIDCConfig
	sessions *Sessions

	mu       sync.Mutex
	provider *oidc.Provider
}

// NewOIDC returns the flow of cfg's provider.
func NewOIDC(sessions *Sessions, cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("auth: OpenID Connect needs an issuer, a client id and a redirect URL")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &OIDC{cfg: cfg, sessions: sessions}, nil
}

// Issuer is the provider's issuer URL.
func (o *OIDC) Issuer() string { return o.cfg.Issuer }

func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.cfg.HTTPClient), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: the OpenID Connect provider's discovery: %w", err)
	}
	o.provider = p
	return p, nil
}

func (o *OIDC) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: o.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"},
	}
}

// oidcFlow is a flow's state, sealed into its token.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

const oidcLabel = "chatql oidc flow"

// Begin starts a sign-in at the provider: the URL to send the browser to,
// and the flow's sealed state, to send back with the code.
func (o *OIDC) Begin(ctx context.Context) (authURL, flow string, err error) {
	p, err := o.discover(ctx)
	if err != nil {
		return "", "", err
	}
	f := oidcFlow{
		State: b64.EncodeToString(randomBytes(16)), Nonce: b64.EncodeToString(randomBytes(16)),
		Verifier: oauth2.GenerateVerifier(), Expires: o.sessions.now().Add(OIDCFlowTTL).Unix(),
	}
	body, _ := json.Marshal(f)
	authURL = o.oauth(p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return authURL, b64.EncodeToString(o.sessions.Seal(oidcLabel, body)), nil
}

// Claims are what chatql reads of a verified ID token.
type OIDCClaims struct {
	Issuer, Subject   string
	Email             string
	EmailVerified     bool
	PreferredUsername string
	GivenName         string
	FamilyName        string
	Name              string
}

// Finish exchanges the code the provider sent back (with the state it
// echoed) for an ID token, verifies it, and returns its claims. Any
// failure of the provider's answers is UNAUTHENTICATED.
func (o *OIDC) Finish(ctx context.Context, flow, code, state string) (OIDCClaims, error) {
	invalid := fmt.Errorf("%w: the sign-in flow is not valid; begin again", ErrUnauthenticated)
	raw, err := b64.DecodeString(flow)
	if err != nil || len(flow) > 4096 {
		return OIDCClaims{}, invalid
	}
	body, err := o.sessions.Open(oidcLabel, raw)
	var f oidcFlow
	if err != nil || json.Unmarshal(body, &f) != nil {
		return OIDCClaims{}, invalid
	}
	if !o.sessions.now().Before(time.Unix(f.Expires, 0)) {
		return OIDCClaims{}, fmt.Errorf("%w: the sign-in took too long; begin again", ErrUnauthenticated)
	}
	if state != f.State {
		return OIDCClaims{}, fmt.Errorf("%w: the state does not match the sign-in's", ErrUnauthenticated)
	}
	p, err := o.discover(ctx)
	if err != nil {
		return OIDCClaims{}, err
	}
	refused := func(what string, err error) error {
		return fmt.Errorf("%w: the provider's %s was refused: %v", ErrUnauthenticated, what, err)
	}
	tok, err := o.oauth(p).Exchange(oidc.ClientContext(ctx, o.cfg.HTTPClient), code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return OIDCClaims{}, refused("token exchange", err)
	}
	rawID, ok := tok.Extra("id_token").(string)
	if !ok {
		return OIDCClaims{}, refused("token response", errors.New("no id_token"))
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: o.sessions.now}).Verify(ctx, rawID)
	if err != nil {
		return OIDCClaims{}, refused("ID token", err)
	}
	if idt.Nonce != f.Nonce {
		return OIDCClaims{}, refused("ID token", errors.New("the nonce does not match the sign-in's"))
	}
	var c struct {
		Email             string `json:"email"`
		EmailVerified     bool   `json:"email_verified"`
		PreferredUsername string `json:"preferred_username"`
		GivenName         string `json:"given_name"`
		FamilyName        string `json:"family_name"`
		Name              string `json:"name"`
	}
	if err := idt.Claims(&c); err != nil {
		return OIDCClaims{}, refused("ID token", err)
	}
	if idt.Subject == "" {
		return OIDCClaims{}, refused("ID token", errors.New("no subject"))
	}
	return OIDCClaims{
		Issuer: idt.Issuer, Subject: idt.Subject, Email: c.Email, EmailVerified: c.EmailVerified,
		PreferredUsername: c.PreferredUsername, GivenName: c.GivenName, FamilyName: c.FamilyName, Name: c.Name,
	}, nil
}

// errNoOIDC is the answer of every OpenID Connect operation on a server
// with no provider configured.
var ErrNoOIDC = fmt.Errorf("sign-in with OpenID Connect is not configured on this server: %w", store.ErrNotFound)

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
	"unique"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/killrchat/chatql/store"
)

// CeremonyTTL is how long a passkey ceremony (registration or sign-in)
// may take between its begin and its finish.
const CeremonyTTL = 5 * time.Minute

// maxCeremonyState bounds a ceremony's state token and a credential a
// client sends.
const maxCeremonyState = 64 << 10

// Passkeys runs WebAuthn's ceremonies (go-webauthn): registering a passkey
// for a signed-in user, and signing in with one, with no password, the
// user found from the credential itself (a discoverable credential). The
// relying party is the server's public URL (CHAT_PUBLIC_URL): its host is
// the RP ID, its origin the one allowed. With none configured, a browser
// on localhost is its own relying party (RP ID "localhost"), so that a
// developer can try passkeys; any other origin is refused.
//
// Between begin and finish the ceremony's state (its challenge) travels
// with the client, sealed by the server (Sessions.Seal) and valid for
// CeremonyTTL: no instance needs to remember it.
type Passkeys struct {
	sessions *Sessions
	public   *url.URL

	mu      sync.Mutex
	parties map[string]*webauthn.WebAuthn
}

// NewPasskeys returns the ceremonies of the relying party at publicURL
// (empty: localhost only).
func NewPasskeys(sessions *Sessions, publicURL string) (*Passkeys, error) {
	p := &Passkeys{sessions: sessions, parties: map[string]*webauthn.WebAuthn{}}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("auth: passkeys: public URL %q: want scheme://host[:port]", publicURL)
		}
		p.public = u
	}
	return p, nil
}

// relyingParty returns the WebAuthn of the origin of ctx's request.
func (p *Passkeys) relyingParty(ctx context.Context) (*webauthn.WebAuthn, error) {
	var rpID, origin string
	if p.public != nil {
		rpID, origin = p.public.Hostname(), p.public.Scheme+"://"+p.public.Host
	} else {
		o := internedFrom(ctx, originKey{})
		u, err := url.Parse(o)
		if o == "" || err != nil || u.Hostname() != "localhost" {
			return nil, store.Invalidf("invalid origin: passkeys work from the server's public URL (CHAT_PUBLIC_URL), or from a browser on localhost when it is not set")
		}
		rpID, origin = "localhost", u.Scheme+"://"+u.Host
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.parties[origin]; ok {
		return w, nil
	}
	if len(p.parties) >= 16 { // localhost ports a developer tried
		clear(p.parties)
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: "chatql", RPOrigins: []string{origin},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: passkeys for %s: %w", origin, err)
	}
	p.parties[origin] = w
	return w, nil
}

// passkeyUser is a user as WebAuthn sees them: their login is the user
// handle the authenticator keeps with a passkey (logins are public and
// never reused), and their passkeys are the credentials they may use.
type passkeyUser struct {
	ref   store.UserRef
	creds []webauthn.Credential
}

func (u passkeyUser) WebAuthnID() []byte   { return []byte(u.ref.Login) }
func (u passkeyUser) WebAuthnName() string { return u.ref.Login }
func (u passkeyUser) WebAuthnDisplayName() string {
	if name := u.ref.Firstname + " " + u.ref.Lastname; name != " " {
		return name
	}
	return u.ref.Login
}
func (u passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func newPasskeyUser(ref store.UserRef, keys []store.Passkey) (passkeyUser, error) {
	u := passkeyUser{ref: ref}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return u, fmt.Errorf("auth: stored passkey of %q: %w", ref.Login, err)
		}
		u.creds = append(u.creds, c)
	}
	return u, nil
}

// ceremony is a ceremony's state, sealed into its token.
type ceremony struct {
	Kind    string               `json:"k"` // "register" or "sign-in"
	Login   string               `json:"l,omitempty"`
	Session webauthn.SessionData `json:"s"`
}

const ceremonyLabel = "chatql passkey ceremony"

func (p *Passkeys) seal(c ceremony) string {
	body, _ := json.Marshal(c)
	return b64.EncodeToString(p.sessions.Seal(ceremonyLabel, body))
}

func (p *Passkeys) open(token, kind string) (ceremony, error) {
	invalid := fmt.Errorf("%w: the passkey ceremony's state is not valid; begin again", ErrUnauthenticated)
	if len(token) > maxCeremonyState {
		return ceremony{}, invalid
	}
	raw, err := b64.DecodeString(token)
	if err != nil {
		return ceremony{}, invalid
	}
	body, err := p.sessions.Open(ceremonyLabel, raw)
	var c ceremony
	if err != nil || json.Unmarshal(body, &c) != nil || c.Kind != kind {
		return ceremony{}, invalid
	}
	if !p.sessions.now().Before(c.Session.Expires) {
		return ceremony{}, fmt.Errorf("%w: the passkey ceremony took too long; begin again", ErrUnauthenticated)
	}
	return c, nil
}

// BeginRegistration starts registering a passkey of u's, who has the
// passkeys have (their authenticators will not make a second one): it
// returns the options for navigator.credentials.create (JSON, as
// PublicKeyCredential.parseCreationOptionsFromJSON reads them) and the
// ceremony's state.
func (p *Passkeys) BeginRegistration(ctx context.Context, u store.UserRef, have []store.Passkey) (options []byte, state string, err error) {
	w, err := p.relyingParty(ctx)
	if err != nil {
		return nil, "", err
	}
	user, err := newPasskeyUser(u, have)
	if err != nil {
		return nil, "", err
	}
	exclude := make([]protocol.CredentialDescriptor, len(user.creds))
	for i, c := range user.creds {
		exclude[i] = c.Descriptor()
	}
	creation, session, err := w.BeginRegistration(user,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: protocol.VerificationRequired,
		}),
		webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, "", fmt.Errorf("auth: begin passkey registration: %w", err)
	}
	options, err = json.Marshal(creation)
	if err != nil {
		return nil, "", err
	}
	return options, p.seal(ceremony{Kind: "register", Login: u.Login, Session: *session}), nil
}

// FinishRegistration checks the authenticator's answer (the JSON of the
// PublicKeyCredential navigator.credentials.create made) to the ceremony
// state began, and returns the new credential to store (as JSON) and its
// id. An answer that does not check is BAD_USER_INPUT.
func (p *Passkeys) FinishRegistration(ctx context.Context, u store.UserRef, have []store.Passkey, state string, response []byte) (id, credential []byte, err error) {
	c, err := p.open(state, "register")
	if err != nil {
		return nil, nil, err
	}
	if c.Login != u.Login {
		return nil, nil, fmt.Errorf("%w: the passkey ceremony is another user's", ErrUnauthenticated)
	}
	w, err := p.relyingParty(ctx)
	if err != nil {
		return nil, nil, err
	}
	user, err := newPasskeyUser(u, have)
	if err != nil {
		return nil, nil, err
	}
	if len(response) > maxCeremonyState {
		return nil, nil, store.Invalidf("invalid passkey: the credential is too large")
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, nil, store.Invalidf("invalid passkey: %s", describeWebAuthn(err))
	}
	cred, err := w.CreateCredential(user, c.Session, parsed)
	if err != nil {
		return nil, nil, store.Invalidf("invalid passkey: %s", describeWebAuthn(err))
	}
	credential, err = json.Marshal(cred)
	return cred.ID, credential, err
}

// BeginSignIn starts a sign-in with a passkey, of a user not named: the
// authenticator offers the passkeys it holds for this relying party. It
// returns the options for navigator.credentials.get (JSON, as
// PublicKeyCredential.parseRequestOptionsFromJSON reads them) and the
// ceremony's state.
func (p *Passkeys) BeginSignIn(ctx context.Context) (options []byte, state string, err error) {
	w, err := p.relyingParty(ctx)
	if err != nil {
		return nil, "", err
	}
	assertion, session, err := w.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, "", fmt.Errorf("auth: begin passkey sign-in: %w", err)
	}
	options, err = json.Marshal(assertion)
	if err != nil {
		return nil, "", err
	}
	return options, p.seal(ceremony{Kind: "sign-in", Session: *session}), nil
}

// PasskeyOwner finds the user a passkey's user handle names, with their
// passkeys; ErrNotFound if there is none.
type PasskeyOwner func(ctx context.Context, login string) (store.UserRef, []store.Passkey, error)

// FinishSignIn checks the authenticator's answer (the JSON of the
// PublicKeyCredential navigator.credentials.get made) to the ceremony
// state began, and returns the user it signs in and their passkey with its
// new signature counter (to store). Any failure is UNAUTHENTICATED.
func (p *Passkeys) FinishSignIn(ctx context.Context, state string, response []byte, owner PasskeyOwner) (store.UserRef, store.Passkey, error) {
	c, err := p.open(state, "sign-in")
	if err != nil {
		return store.UserRef{}, store.Passkey{}, err
	}
	w, err := p.relyingParty(ctx)
	if err != nil {
		return store.UserRef{}, store.Passkey{}, err
	}
	refused := func(err error) error {
		return fmt.Errorf("%w: the passkey was not accepted: %s", ErrUnauthenticated, describeWebAuthn(err))
	}
	if len(response) > maxCeremonyState {
		return store.UserRef{}, store.Passkey{}, refused(errors.New("the answer is too large"))
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return store.UserRef{}, store.Passkey{}, refused(err)
	}
	var keys []store.Passkey
	var failure error
	user, cred, err := w.ValidatePasskeyLogin(func(_, handle []byte) (webauthn.User, error) {
		ref, have, err := owner(ctx, string(handle))
		if err != nil {
			failure = err
			return nil, err
		}
		keys = have
		return newPasskeyUser(ref, have)
	}, c.Session, parsed)
	if failure != nil && !errors.Is(failure, store.ErrNotFound) {
		return store.UserRef{}, store.Passkey{}, failure // the store failed
	}
	if err != nil {
		return store.UserRef{}, store.Passkey{}, refused(err)
	}
	if cred.Authenticator.CloneWarning {
		return store.UserRef{}, store.Passkey{}, refused(errors.New("its signature counter went back: it may have been cloned"))
	}
	ref := user.(passkeyUser).ref
	for _, k := range keys {
		if string(k.ID) == string(cred.ID) {
			k.Credential, err = json.Marshal(cred)
			k.LastUsedAt = p.sessions.now()
			return ref, k, err
		}
	}
	return store.UserRef{}, store.Passkey{}, refused(errors.New("no such passkey"))
}

// describeWebAuthn is the part of a go-webauthn error a client may read.
func describeWebAuthn(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return pe.Details
	}
	return err.Error()
}

type originKey struct{}

// withOrigin returns ctx carrying the request's Origin header (a
// browser's), which passkeys' relying party is found from on localhost.
func withOrigin(ctx context.Context, origin string) context.Context {
	if origin == "" || len(origin) > 300 {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, unique.Make(origin))
}

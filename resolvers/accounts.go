package resolvers

import (
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// signInMethods name the store's sign-in methods in the API.
var signInMethods = map[string]model.SignInMethod{
	store.SignInPassword: model.SignInMethodPassword,
	store.SignInPasskey:  model.SignInMethodPasskey,
	store.SignInOIDC:     model.SignInMethodOidc,
}

// sessionOf is s as the API shows it to its user, whose request's session
// is current.
func sessionOf(s store.Session, current string) model.Session {
	method, ok := signInMethods[s.Method]
	if !ok {
		method = model.SignInMethodPassword // sessions from before methods were recorded
	}
	seen := s.LastSeenAt
	if seen.IsZero() {
		seen = s.CreatedAt
	}
	return model.Session{
		ID: s.ID, Device: s.Device, Address: s.Address, SignInMethod: method, TwoFactor: s.TwoFactor,
		CreatedAt: s.CreatedAt, LastSeenAt: seen, ExpiresAt: s.ExpiresAt, Current: s.ID == current,
	}
}

// passkeyOf is p as the API shows it.
func passkeyOf(p store.Passkey) model.Passkey {
	out := model.Passkey{ID: chat.PasskeyID(p.ID), Name: p.Name, CreatedAt: p.CreatedAt}
	if !p.LastUsedAt.IsZero() {
		used := p.LastUsedAt
		out.LastUsedAt = &used
	}
	return out
}

// identityOf is id as the API shows it.
func identityOf(id store.Identity) model.LinkedIdentity {
	return model.LinkedIdentity{Issuer: id.Issuer, Subject: id.Subject, Email: id.Email, LinkedAt: id.LinkedAt}
}

package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"html/template"
	"net"
	"net/http"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/notify/mail"
)

// startEmail gives the chat its email (through CHAT_SMTP_URL's relay, or
// logged) and sends the queued letters until the server closes.
func (s *Server) startEmail(ctx context.Context, core *chat.Service, secret []byte) error {
	mailer, err := mail.New(s.cfg.SMTPURL, s.log)
	if err != nil {
		return err
	}
	public := s.linksURL()
	if s.cfg.SMTPURL == "" {
		s.log.Info("mail: no SMTP relay (CHAT_SMTP_URL): emails and their links are logged", "links", public)
	}
	key := hmac.New(sha256.New, secret)
	key.Write([]byte("chatql email digest unsubscribe key"))
	core.Email = chat.NewEmail(chat.Email{
		Mailer: mailer, PublicURL: public, LinkTTL: s.cfg.EmailLinkTTL,
		DigestAfter: s.cfg.EmailDigestAfter, DigestEvery: s.cfg.EmailDigestEvery, UnsubscribeKey: key.Sum(nil),
	})
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		core.RunEmail(ctx)
	}()
	s.stopEmail = func() { stop(); <-done }
	return nil
}

// linksURL is where emailed links point: CHAT_PUBLIC_URL, or this
// instance on localhost.
func (s *Server) linksURL() string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	_, port, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil || port == "" || port == "0" {
		port = "8080"
	}
	return "http://localhost:" + port
}

// emailPage is the page of an emailed link: a form to confirm (and, for a
// reset, to choose the new password), or the outcome.
var emailPage = template.Must(template.New("email").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>chatql: {{.Title}}</title></head>
<body style="font-family: sans-serif; max-width: 32em; margin: 3em auto">
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{.Message}}</p>{{end}}
{{if .Action}}<form method="post" action="{{.Action}}">
<input type="hidden" name="token" value="{{.Token}}">
{{if .Password}}<p><label>New password (8 to 72 bytes)<br><input type="password" name="password" autocomplete="new-password" required minlength="8"></label></p>{{end}}
<p><button type="submit">{{.Button}}</button></p>
</form>{{end}}
</body></html>
`))

// emailPageData fills emailPage.
type emailPageData struct {
	Title, Message, Action, Token, Button string
	Password                              bool
}

// emailRoutes serves the pages of the emailed links. A GET only shows a
// form, so that a mail scanner that follows links uses none up; the POST
// acts. The unsubscribe URL takes RFC 8058's one-click POST too.
func (s *Server) emailRoutes(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	page := func(w http.ResponseWriter, status int, d emailPageData) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
		w.WriteHeader(status)
		_ = emailPage.Execute(w, d)
	}
	fail := func(w http.ResponseWriter, r *http.Request, title string, err error) {
		status, msg := http.StatusBadRequest, err.Error()
		switch code, _ := apierror.Of(err); {
		case code == apierror.RateLimited:
			status = http.StatusTooManyRequests
		case code == apierror.BadUserInput:
		default:
			s.log.WarnContext(r.Context(), "mail: a link's page failed", "path", r.URL.Path, "err", err)
			status, msg = http.StatusInternalServerError, "Something went wrong; try again later."
		}
		page(w, status, emailPageData{Title: title, Message: msg})
	}
	token := func(r *http.Request) string {
		if t := r.URL.Query().Get("token"); t != "" {
			return t
		}
		return r.PostFormValue("token")
	}
	mux.Handle("/email/verify", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const title = "Confirm your email address"
		if r.Method != http.MethodPost {
			page(w, http.StatusOK, emailPageData{Title: title, Action: "/email/verify", Token: token(r), Button: "Confirm"})
			return
		}
		if err := s.core.VerifyEmail(r.Context(), token(r)); err != nil {
			fail(w, r, title, err)
			return
		}
		page(w, http.StatusOK, emailPageData{Title: "Email address confirmed", Message: "Your address is verified."})
	})))
	mux.Handle("/email/reset", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const title = "Choose a new password"
		if r.Method != http.MethodPost {
			page(w, http.StatusOK, emailPageData{Title: title, Action: "/email/reset", Token: token(r), Button: "Change the password", Password: true})
			return
		}
		if err := s.core.ResetPassword(r.Context(), token(r), r.PostFormValue("password")); err != nil {
			fail(w, r, title, err)
			return
		}
		page(w, http.StatusOK, emailPageData{Title: "Password changed", Message: "Your password is changed and every session of your account has ended: sign in again."})
	})))
	mux.Handle("/email/unsubscribe", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const title = "Stop email digests"
		if r.Method != http.MethodPost {
			if _, err := s.core.UnsubscribeLogin(token(r)); err != nil {
				fail(w, r, title, err)
				return
			}
			page(w, http.StatusOK, emailPageData{Title: title, Message: "Stop the emails of your unread messages?", Action: "/email/unsubscribe", Token: token(r), Button: "Unsubscribe"})
			return
		}
		if err := s.core.Unsubscribe(r.Context(), token(r)); err != nil {
			fail(w, r, title, err)
			return
		}
		page(w, http.StatusOK, emailPageData{Title: "Unsubscribed", Message: "You will get no more email digests. Turn them back on in the app's settings."})
	})))
}

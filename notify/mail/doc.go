// Package mail sends email digests of a person's unread mentions and direct
// messages, and letters about their account (an address to verify, a
// password to reset).
//
// A Mailer sends a Digest. SMTPMailer sends it through any SMTP relay
// configured by one URL (see ParseURL):
//
//	smtp://user:pass@smtp.example.com:587?from=chat@example.com
//	smtp://relay.internal:25?from=chat@example.com&starttls=false
//	smtps://user:pass@smtp.example.com?from=chatql%20%3Cchat@example.com%3E
//
// "smtp" speaks STARTTLS (port 587 by default; refusing servers that do
// not offer it unless starttls=false), "smtps" speaks TLS from the first
// byte (port 465 by default). Credentials, given as the URL's user
// information, are sent with AUTH PLAIN, and only over TLS or to a
// loopback host. The query parameters dial_timeout and timeout (Go
// durations) bound the connection and the whole exchange.
//
// Without SMTP, LogMailer writes each digest to a slog.Logger instead.
//
// Each message is multipart/alternative with a text/plain and an HTML part
// (every user-supplied text HTML-escaped) and carries List-Unsubscribe with
// an https link and List-Unsubscribe-Post (RFC 8058), so that mail clients
// offer a one-click unsubscribe. RFC 8058 also asks for a DKIM signature
// covering those headers; that is the relay's job.
package mail

// Package webpush sends Web Push notifications (RFC 8030) to the push
// services behind browsers' subscriptions: the payload is encrypted with
// aes128gcm for the subscription's keys (RFC 8291) and the request carries
// a VAPID authorization signed with the server's key (RFC 8292).
//
// The encryption and the VAPID token are made by
// github.com/SherClockHolmes/webpush-go; this package adds what a server
// needs around it: VAPID key generation and storage, validation of the
// subscriptions users register, a bounded HTTP client that connects only
// to public addresses, and a classification of the push service's answer
// (see Outcome). The package pushtest provides a push service for tests
// that checks and decrypts what a Sender sends.
package webpush

// Package linkpreview finds the first link in a chat message and fetches a
// preview card (title, description, image) for it, safely.
//
// Fetching a URL that a user typed is a server-side request forgery risk:
// the Fetcher only speaks http and https, ignores proxy settings from the
// environment, and checks every IP address it is about to connect to (at
// dial time, so DNS tricks and redirects cannot get around it), refusing
// loopback, private, link-local, multicast, shared (CGNAT) and other
// special-purpose addresses. Every fetch is bounded in time and in bytes, and
// only the head of an HTML page is parsed.
package linkpreview

// Package webhook delivers chat events to outside HTTP endpoints following
// the Standard Webhooks specification.
//
// Every request is a POST of a JSON body carrying three headers:
// webhook-id (the message's unique id, the same on every retry),
// webhook-timestamp (the Unix time of the attempt, in seconds) and
// webhook-signature (a space-separated list of "v1,<base64>" signatures,
// each an HMAC-SHA256 of "{id}.{timestamp}.{body}" under the endpoint's
// secret). Secrets are written "whsec_" followed by the base64 of the key.
// Receivers check a request with Verify.
//
// # Retry policy
//
// Deliver makes one attempt and classifies its Result; the caller (a
// durable outbox) schedules the next attempt with Next:
//
//   - a 2xx response is Delivered;
//   - 410 Gone is Failed for good: the receiver asks us to stop, and the
//     endpoint should be disabled; so is a target that fails validation or
//     resolves to an address the dialer refuses;
//   - everything else (timeouts, network errors, 5xx, 429, 3xx, which are
//     never followed, and other 4xx) is Retry.
//
// Retries follow the schedule of the specification's guidance, counted
// from the attempt that failed: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h,
// each with ±20% jitter (see Backoff). A 429 or 503 carrying Retry-After
// waits for the longer of that header (capped at MaxRetryAfter) and the
// schedule. After MaxAttempts attempts (the first and seven retries, about
// 28 hours) the message is dead. Other 4xx responses are retried on the
// same bounded schedule rather than dropped at once, since they are often a
// receiver's transient misconfiguration (a 404 during a deploy, a 401 while
// a secret is rotated); the bound keeps a broken endpoint from being
// retried for ever.
//
// # Safety
//
// Targets are URLs typed by users, so a Sender only posts to https URLs of
// at most 2,048 bytes without user information, and its dialer refuses
// loopback, private, link-local and otherwise reserved addresses at dial
// time, so DNS tricks cannot get around the check. Redirects are never
// followed. Tests set Options.AllowLoopback to reach httptest receivers.
package webhook

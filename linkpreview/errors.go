package linkpreview

import "errors"

var (
	// ErrRefused reports a URL the Fetcher will not fetch for safety: a
	// scheme other than http or https, or a host that is (or resolves to,
	// or redirects to) a loopback, private or otherwise non-public address.
	ErrRefused = errors.New("linkpreview: refused")

	// ErrNotHTML reports a page whose content type is not text/html or
	// application/xhtml+xml; such pages get no preview.
	ErrNotHTML = errors.New("linkpreview: not an HTML page")

	// ErrTimeout reports a fetch that did not finish within the Fetcher's
	// timeout; the error also wraps the underlying cause.
	ErrTimeout = errors.New("linkpreview: timed out")

	// ErrBadURL reports a URL that cannot be fetched because it is
	// malformed, too long, has no host or carries user information.
	ErrBadURL = errors.New("linkpreview: bad URL")

	// ErrCharset reports a page in a character encoding previews do not
	// read (see decoding): the East Asian multi-byte ones.
	ErrCharset = errors.New("linkpreview: page encoding not supported")

	// ErrStatus reports a response with a status other than 2xx.
	ErrStatus = errors.New("linkpreview: unexpected HTTP status")

	// ErrTooManyRedirects reports a chain of redirects longer than the
	// Fetcher allows.
	ErrTooManyRedirects = errors.New("linkpreview: too many redirects")
)

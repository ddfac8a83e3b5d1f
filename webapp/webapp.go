// Package webapp serves the reference chat web app: plain HTML, ES modules
// and CSS in static/, embedded in the binary, with no build step. Its one
// third-party file, the official graphql-ws client's browser build, is in
// static/vendor/ (fetched from the npm registry at a pinned version by
// scripts/webapp-assets.sh and committed), so the app loads nothing from
// elsewhere and works with no internet.
package webapp

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// policy lets the page load only what this server serves and talk only to
// it (its API over HTTP and websockets), and to where files are kept when
// that is elsewhere (fileOrigins: the object store's signed URLs, which the
// page uploads to and shows images from). Images of link previews from
// other sites are not loaded: the page would tell those sites who reads
// the message.
func policy(fileOrigins []string) string {
	extra := ""
	for _, o := range fileOrigins {
		extra += " " + o
	}
	return "default-src 'self'; connect-src 'self'" + extra + "; img-src 'self' data:" + extra + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// Handler serves the app's files from the root of the site: the page at
// "/" and its modules beside it. Browsers revalidate them on each load
// (they are small), so a new binary's app is picked up at once.
// fileOrigins are where the signed URLs of files point when not at this
// server (scheme://host[:port]).
func Handler(fileOrigins ...string) http.Handler {
	files, _ := fs.Sub(static, "static") // cannot fail: the directory is embedded
	serve := http.FileServerFS(files)
	csp := policy(fileOrigins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		serve.ServeHTTP(w, r)
	})
}

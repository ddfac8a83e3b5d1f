// Package playground serves GraphiQL with everything it loads embedded in
// the binary (assets/, fetched from the npm registry at pinned versions by
// scripts/playground-assets.sh and committed), so the playground works with
// no internet: gqlgen's own page loads the same files from a CDN.
package playground

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"

	gqlplayground "github.com/99designs/gqlgen/graphql/playground"
)

//go:embed assets
var assets embed.FS

// Path is where the playground's page is served; Prefix is the path its
// assets are served under.
const (
	Path   = "/playground"
	Prefix = "/playground/"
)

// Assets serves the embedded files under Prefix. They never change within
// one binary, so browsers may keep them a day.
func Assets() http.Handler {
	files, _ := fs.Sub(assets, "assets") // cannot fail: the directory is embedded
	serve := http.StripPrefix(Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix { // not a listing of the assets: the page
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		serve.ServeHTTP(w, r)
	})
}

// Page serves GraphiQL's page for the API at endpoint, loading its scripts
// and styles from Assets, each checked by the browser against its digest
// (Subresource Integrity).
func Page(title, endpoint string) http.Handler {
	return gqlplayground.Handler(title, endpoint,
		gqlplayground.WithGraphiqlVersion(asset("graphiql.min.js"), asset("graphiql.min.css"), integrity("graphiql.min.js"), integrity("graphiql.min.css")),
		gqlplayground.WithGraphiqlReactVersion(asset("react.production.min.js"), asset("react-dom.production.min.js"), integrity("react.production.min.js"), integrity("react-dom.production.min.js")),
	)
}

func asset(name string) string { return path.Join(Prefix, name) }

// integrity is the Subresource Integrity digest of an embedded asset.
func integrity(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic("playground: no embedded asset " + name) // a build without the assets
	}
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

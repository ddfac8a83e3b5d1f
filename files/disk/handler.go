package disk

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/killrchat/chatql/files"
)

// ServeHTTP serves the signed URLs of UploadURL and DownloadURL at the
// Store's prefix: PUT stores a new object (never replacing one: 409), GET
// and HEAD serve one, and OPTIONS answers the CORS preflight of the allowed
// origins. Refusals are short plain-text reasons: 403 for a bad, expired or
// other key's signature, 400 for a body or type other than the signed one,
// 404 for a missing object.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, s.prefix)
	if !ok || files.CheckKey(key) != nil {
		http.Error(w, "invalid key", http.StatusNotFound)
		return
	}
	s.cors(w, r)
	switch r.Method {
	case http.MethodOptions:
		s.preflight(w, r)
	case http.MethodPut:
		s.put(w, r, key)
	case http.MethodGet, http.MethodHead:
		s.get(w, r, key)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// allowed reports whether a browser at origin may use the signed URLs.
func (s *Store) allowed(origin string) bool {
	return origin != "" && (s.anyOrig || s.origins[origin])
}

// cors adds the CORS headers of a request from an allowed origin.
func (s *Store) cors(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !s.allowed(origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "Content-Disposition, Content-Length, Content-Range, ETag")
}

// preflight answers a CORS preflight of a PUT or GET from an allowed origin.
func (s *Store) preflight(w http.ResponseWriter, r *http.Request) {
	m := r.Header.Get("Access-Control-Request-Method")
	if !s.allowed(r.Header.Get("Origin")) || (m != http.MethodPut && m != http.MethodGet) {
		http.Error(w, "origin or method not allowed", http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Range, If-None-Match")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// put stores the body of a signed upload as a new object.
func (s *Store) put(w http.ResponseWriter, r *http.Request, key string) {
	g, err := s.verify(http.MethodPut, key, r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if r.Header.Get("Content-Type") != g.contentType {
		http.Error(w, "content type differs from the signed one", http.StatusForbidden)
		return
	}
	if r.ContentLength >= 0 && r.ContentLength != g.size {
		http.Error(w, "content length differs from the signed one", http.StatusBadRequest)
		return
	}
	if _, err := os.Stat(s.path(key)); err == nil {
		http.Error(w, "object exists", http.StatusConflict)
		return
	}
	body := http.MaxBytesReader(w, r.Body, g.size+1)
	tmp, err := s.writeTemp(r.Context(), body, g.size, g.contentType)
	if err != nil {
		s.putError(w, err)
		return
	}
	defer os.Remove(tmp)
	if err := s.commit(tmp, key, false); err != nil {
		s.putError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// putError answers a failed upload.
func (s *Store) putError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, os.ErrExist):
		http.Error(w, "object exists", http.StatusConflict)
	case errors.Is(err, files.ErrUnavailable):
		http.Error(w, "storage failed", http.StatusServiceUnavailable)
	default:
		http.Error(w, "body size differs from the signed one, or the body was cut", http.StatusBadRequest)
	}
}

// get serves an object through a signed download.
func (s *Store) get(w http.ResponseWriter, r *http.Request, key string) {
	g, err := s.verify(http.MethodGet, key, r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	o, err := s.open(r.Context(), key)
	if errors.Is(err, files.ErrNotFound) {
		http.Error(w, "no such object", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "storage failed", http.StatusServiceUnavailable)
		return
	}
	defer o.Close()
	h := w.Header()
	ct := g.resp.ContentType
	if ct == "" {
		ct = o.info.ContentType
	}
	h.Set("Content-Type", ct)
	if g.resp.ContentDisposition != "" {
		h.Set("Content-Disposition", g.resp.ContentDisposition)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", max(0, g.expires-s.now().Unix())))
	h.Set("ETag", o.etag())
	http.ServeContent(w, r, "", o.modTime, o)
}

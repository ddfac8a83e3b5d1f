package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"unique"

	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/files/disk"
	"github.com/killrchat/chatql/files/s3"
	"github.com/killrchat/chatql/linkpreview"
	"github.com/killrchat/chatql/store"
)

// s3URLForm is the form of -s3-url, as flags and errors state it.
const s3URLForm = "http[s]://ACCESS_KEY:SECRET_KEY@HOST[:PORT]/BUCKET[?region=R&path-style=false&create=true&timeout=10s]"

// filesPath is where the server serves the signed URLs of files on disk.
const filesPath = "/files/"

// openFiles opens the object store of the configuration and the service of
// files over it and the store's records. With files on disk, handler
// serves their signed URLs (at filesPath); it is nil with S3, whose URLs
// are the object store's own.
func openFiles(ctx context.Context, cfg Config, records store.Files, secret []byte, log *slog.Logger) (svc *files.Service, handler http.Handler, err error) {
	var objects files.Objects
	switch cfg.Files {
	case "s3":
		s3cfg, err := s3.ParseURL(cfg.S3URL)
		if err != nil {
			return nil, nil, err
		}
		if objects, err = s3.New(ctx, s3cfg); err != nil {
			return nil, nil, fmt.Errorf("open the S3 object store: %w", err)
		}
		log.Info("files on S3", "endpoint", s3cfg.Endpoint, "bucket", s3cfg.Bucket)
	default:
		dir := filepath.Join(cfg.DataDir, "files")
		d, err := disk.New(dir, filesSecret(secret), publicBase(cfg.PublicURL), filesPath,
			disk.Options{AllowedOrigins: cfg.AllowedOrigins, MaxSize: cfg.FileLimits.MaxFileBytes})
		if err != nil {
			return nil, nil, fmt.Errorf("open the files on disk: %w", err)
		}
		objects, handler = d, d
		log.Info("files on disk", "dir", dir)
	}
	return files.NewService(records, objects, cfg.FileLimits, log), handler, nil
}

// filesSecret is the key of the signatures of the files' URLs, derived from
// the tokens' secret (every instance has it) so that neither reveals the
// other.
func filesSecret(tokens []byte) []byte {
	mac := hmac.New(sha256.New, tokens)
	mac.Write([]byte("chatql files URL signatures"))
	return mac.Sum(nil)
}

// requestBaseKey keys the scheme://host a request came to.
type requestBaseKey struct{}

// withRequestBase puts the scheme://host a request came to in its context,
// for the signed URLs of files on disk made while answering it.
func withRequestBase(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		// Interned: a server is reached at one or a few, and every
		// websocket keeps its base for its life.
		ctx := context.WithValue(r.Context(), requestBaseKey{}, unique.Make(scheme+"://"+r.Host))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requestBase is the scheme://host of ctx's request, or "".
func requestBase(ctx context.Context) string {
	if h, ok := ctx.Value(requestBaseKey{}).(unique.Handle[string]); ok {
		return h.Value()
	}
	return ""
}

// requestBaseScope is the scope of a subscriber's encodings (live.Config):
// the host its connection came to, which signed URLs of files on disk start
// with when no public URL is configured.
func requestBaseScope(ctx context.Context) (string, func(context.Context) context.Context) {
	base := ctx.Value(requestBaseKey{})
	return requestBase(ctx), func(ctx context.Context) context.Context {
		if base == nil {
			return ctx
		}
		return context.WithValue(ctx, requestBaseKey{}, base)
	}
}

// publicBase returns the scheme://host signed URLs start with: the
// configured public URL, or else the host the request came to.
func publicBase(configured string) func(context.Context) string {
	return func(ctx context.Context) string {
		if configured != "" {
			return configured
		}
		if base := requestBase(ctx); base != "" {
			return base
		}
		return "http://localhost"
	}
}

// openPreviews is the fetcher of link previews, or nil when they are off.
func openPreviews(cfg Config) *linkpreview.Fetcher {
	if !cfg.LinkPreviews {
		return nil
	}
	return linkpreview.New(linkpreview.Options{AllowLoopback: cfg.LinkPreviewsAllowLoopback})
}

// startSweeper sweeps the files that are due every FileSweepInterval until
// ctx ends or the server closes.
func (s *Server) startSweeper(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.core.Files.RunSweeper(ctx, s.core.FileHeld, s.cfg.FileSweepInterval)
	}()
	s.stopSweeper = func() { stop(); <-done }
}

// fileOrigins are where the signed URLs of files point, for the web app's
// content policy: the S3 store, or the configured public URL of files on
// disk (the app's own origin otherwise).
func (s *Server) fileOrigins() []string {
	switch {
	case s.cfg.Files == "s3":
		if c, err := s3.ParseURL(s.cfg.S3URL); err == nil {
			return []string{c.Origin()}
		}
	case s.cfg.PublicURL != "":
		return []string{s.cfg.PublicURL}
	}
	return nil
}

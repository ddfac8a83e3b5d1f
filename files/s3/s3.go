// Package s3 keeps the objects of package files in a bucket of any
// S3-compatible store (AWS S3, MinIO, versitygw, SeaweedFS, ...) through
// minio-go. Signed URLs are S3 presigned URLs (signature V4): an upload's
// signature covers its Content-Type and Content-Length headers, so the store
// itself refuses a body of another size or type.
package s3

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/killrchat/chatql/files"
)

// DefaultTimeout bounds each operation when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config addresses a bucket.
type Config struct {
	// Endpoint is the store's URL, http:// or https://, without a path,
	// such as https://s3.eu-west-3.amazonaws.com or http://127.0.0.1:7070.
	Endpoint string
	// Bucket holds the objects.
	Bucket string
	// Region is the bucket's region (default us-east-1); it is never
	// looked up, so signing URLs makes no request.
	Region string
	// AccessKey and SecretKey are the credentials.
	AccessKey, SecretKey string
	// PathStyle addresses the bucket as endpoint/bucket rather than
	// bucket.endpoint (most self-hosted stores need it).
	PathStyle bool
	// CreateBucket creates the bucket in New if it is missing.
	CreateBucket bool
	// Timeout bounds each operation (DefaultTimeout when zero). For Put it
	// bounds the whole transfer of the body; for Open, the wait for the
	// object's first byte (the caller's context bounds the reading).
	Timeout time.Duration
}

// Store is a files.Objects in an S3 bucket.
type Store struct {
	client  *minio.Client
	bucket  string
	timeout time.Duration
}

var _ files.Objects = (*Store)(nil)

// New connects to cfg's bucket; with cfg.CreateBucket, it creates the bucket
// if it is missing, which is then its only request to the store.
func New(ctx context.Context, cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("s3: endpoint %q is not http(s)://host[:port]", cfg.Endpoint)
	}
	if err := s3utils.CheckValidBucketName(cfg.Bucket); err != nil {
		return nil, fmt.Errorf("s3: bucket %q: %w", cfg.Bucket, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    transport(cfg.Timeout),
		MaxRetries:   3,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	s := &Store{client: client, bucket: cfg.Bucket, timeout: cfg.Timeout}
	if cfg.CreateBucket {
		if err := s.createBucket(ctx, cfg.Region); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// transport is an http.Transport whose connections and response headers
// wait at most timeout.
func transport(timeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = timeout
	t.MaxIdleConnsPerHost = 16
	return t
}

// createBucket makes the bucket unless it exists.
func (s *Store) createBucket(ctx context.Context, region string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.fail(ctx, "bucket exists", s.bucket, err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
		return nil
	}
	return s.fail(ctx, "make bucket", s.bucket, err)
}

// op bounds an operation by the Store's timeout.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// UploadURL presigns a PUT of key whose signature covers the Content-Type,
// Content-Length and If-None-Match: * headers of the returned request: the
// store refuses another type or size (403) and, being a conditional write,
// an existing key (412), so that a signed URL cannot replace a checked
// object (AWS S3, MinIO and versitygw honour If-None-Match on PUT; a store
// that ignores it lets a second PUT of the same URL replace the object).
// A bucket used from browsers needs a CORS rule allowing PUT with these
// headers from the web app's origin.
func (s *Store) UploadURL(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (files.SignedRequest, error) {
	if err := files.CheckKey(key); err != nil {
		return files.SignedRequest{}, err
	}
	if size < 0 {
		return files.SignedRequest{}, fmt.Errorf("s3: negative size %d", size)
	}
	headers := map[string]string{
		"Content-Type":   contentType,
		"Content-Length": strconv.FormatInt(size, 10),
		"If-None-Match":  "*",
	}
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	u, err := s.client.PresignHeader(ctx, http.MethodPut, s.bucket, key, seconds(ttl), nil, h)
	if err != nil {
		return files.SignedRequest{}, fmt.Errorf("s3: presigning a PUT of %s: %w", key, err)
	}
	return files.SignedRequest{Method: http.MethodPut, URL: u.String(), Headers: headers}, nil
}

// DownloadURL presigns a GET of key whose response headers are h's
// (response-content-type, response-content-disposition).
func (s *Store) DownloadURL(ctx context.Context, key string, ttl time.Duration, h files.ResponseHeaders) (string, error) {
	if err := files.CheckKey(key); err != nil {
		return "", err
	}
	q := url.Values{}
	if h.ContentType != "" {
		q.Set("response-content-type", h.ContentType)
	}
	if h.ContentDisposition != "" {
		q.Set("response-content-disposition", h.ContentDisposition)
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, key, seconds(ttl), q)
	if err != nil {
		return "", fmt.Errorf("s3: presigning a GET of %s: %w", key, err)
	}
	return u.String(), nil
}

// seconds rounds ttl up to a whole second, as S3 counts expiry.
func seconds(ttl time.Duration) time.Duration {
	return (ttl + time.Second - 1).Truncate(time.Second)
}

// Put uploads size bytes of r as key's object.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := files.CheckKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("s3: negative size %d", size)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	// A plain PUT with a Content-MD5, not minio-go's default over http
	// (aws-chunked signed chunks), which some S3 servers keep as the
	// object's Content-Encoding and serve to browsers that cannot decode it.
	_, err := s.client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{ContentType: contentType, SendContentMd5: true, DisableContentSha256: true})
	return s.fail(ctx, "put", key, err)
}

// Open gets key's object.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, files.ObjectInfo, error) {
	if err := files.CheckKey(key); err != nil {
		return nil, files.ObjectInfo{}, err
	}
	opCtx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(s.timeout, cancel)
	obj, err := s.client.GetObject(opCtx, s.bucket, key, minio.GetObjectOptions{})
	var st minio.ObjectInfo
	if err == nil {
		st, err = obj.Stat()
	}
	if !timer.Stop() && ctx.Err() == nil { // the timeout cancelled the request
		err = fmt.Errorf("no answer within %v: %w", s.timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		if obj != nil {
			obj.Close()
		}
		return nil, files.ObjectInfo{}, s.fail(ctx, "get", key, err)
	}
	return &object{Object: obj, cancel: cancel}, info(st), nil
}

// object is an open object: closing it ends its request.
type object struct {
	*minio.Object
	cancel context.CancelFunc
}

// Close closes the object and cancels its request.
func (o *object) Close() error {
	err := o.Object.Close()
	o.cancel()
	return err
}

// Stat heads key's object.
func (s *Store) Stat(ctx context.Context, key string) (files.ObjectInfo, error) {
	if err := files.CheckKey(key); err != nil {
		return files.ObjectInfo{}, err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return files.ObjectInfo{}, s.fail(ctx, "stat", key, err)
	}
	return info(st), nil
}

// info is the files.ObjectInfo of an S3 object.
func info(st minio.ObjectInfo) files.ObjectInfo {
	return files.ObjectInfo{Size: st.Size, ContentType: st.ContentType}
}

// Delete removes key's object (S3 deletes a missing one successfully).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := files.CheckKey(key); err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	return s.fail(ctx, "delete", key, s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

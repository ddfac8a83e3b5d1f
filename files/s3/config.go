package s3

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ParseURL reads a Config from one URL, the form of CHAT_S3_URL:
//
//	http[s]://ACCESS_KEY:SECRET_KEY@HOST[:PORT]/BUCKET[?region=R&path-style=false&create=true&timeout=10s]
//
// The endpoint is the scheme and host; path-style addressing is the
// default (path-style=false asks for virtual-hosted buckets); the bucket is
// created only with create=true. Keys with reserved characters are
// percent-encoded.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Config{}, fmt.Errorf("s3: %w", err)
	}
	bucket := strings.Trim(u.Path, "/")
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || bucket == "" || strings.Contains(bucket, "/") {
		return Config{}, fmt.Errorf("s3: URL %q is not http(s)://ACCESS:SECRET@HOST[:PORT]/BUCKET", u.Redacted())
	}
	cfg := Config{Endpoint: u.Scheme + "://" + u.Host, Bucket: bucket, PathStyle: true}
	if u.User != nil {
		cfg.AccessKey = u.User.Username()
		cfg.SecretKey, _ = u.User.Password()
	}
	q := u.Query()
	cfg.Region = q.Get("region")
	for name, dst := range map[string]*bool{"path-style": &cfg.PathStyle, "create": &cfg.CreateBucket} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return Config{}, fmt.Errorf("s3: %s=%q is not a boolean", name, v)
			}
		}
	}
	if v := q.Get("timeout"); v != "" {
		if cfg.Timeout, err = time.ParseDuration(v); err != nil || cfg.Timeout <= 0 {
			return Config{}, fmt.Errorf("s3: timeout=%q is not a positive duration", v)
		}
	}
	return cfg, nil
}

// Origin is the scheme://host[:port] of the store's signed URLs, which a web
// page that uploads and shows files must be allowed to reach: the endpoint,
// or the bucket's own host with virtual-hosted addressing.
func (c Config) Origin() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return c.Endpoint
	}
	host := u.Host
	if !c.PathStyle {
		host = c.Bucket + "." + host
	}
	return u.Scheme + "://" + host
}

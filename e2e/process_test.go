package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

// buildChatql builds the server binary (the module's root, chatql) into a
// temporary directory.
func buildChatql(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "chatql")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/killrchat/chatql").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// chatqlProcess is the real server binary, run by a test on a loopback port
// the kernel picks.
type chatqlProcess struct {
	cmd    *exec.Cmd
	URL    string // the GraphQL endpoint
	log    *processLog
	exited chan struct{} // closed when the process has exited; then err is Wait's
	err    error
}

// startChatql runs bin with the parts of cfg these tests set, as CHAT_*
// variables, and waits until it serves. The process is killed at the end
// of the test if it still runs.
func startChatql(t *testing.T, bin string, cfg server.Config) *chatqlProcess {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = chatqlEnv(cfg)
	p := &chatqlProcess{cmd: cmd, log: &processLog{serving: make(chan string, 1)}, exited: make(chan struct{})}
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("chatql log:\n%s", p.log)
		}
	})
	select {
	case addr := <-p.log.serving:
		p.URL = addr + "/query"
	case <-p.exited:
		t.Fatalf("chatql exited before serving: %v\n%s", p.err, p.log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("chatql not serving after 2 minutes:\n%s", p.log)
	}
	return p
}

// chatqlEnv is the environment of a server run with cfg: the variables of
// the fields tests set, and none of the test's own CHAT_* variables.
func chatqlEnv(cfg server.Config) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHAT_") {
			env = append(env, kv)
		}
	}
	for _, a := range ratelimit.Actions() {
		env = append(env, rateLimitVars[a]+"="+cfg.RateLimits[a].String())
	}
	return append(env,
		"CHAT_ADDR=127.0.0.1:0",
		"CHAT_STORE="+cfg.Store,
		"CHAT_DATA_DIR="+cfg.DataDir,
		"CHAT_JWT_SECRET="+cfg.JWTSecret,
		"CHAT_BCRYPT_COST="+strconv.Itoa(cfg.BcryptCost),
		"CHAT_SHUTDOWN_TIMEOUT="+cfg.ShutdownTimeout.String(),
		"CHAT_TOKEN_TTL="+cfg.TokenTTL.String(),
		"CHAT_SESSION_CHECK="+cfg.SessionCheck.String(),
		"CHAT_READ_TIMEOUT="+cfg.ReadTimeout.String(),
		"CHAT_MAX_CONNS_PER_CLIENT="+strconv.Itoa(cfg.MaxConnsPerClient),
		"CHAT_CASSANDRA_HOSTS="+strings.Join(cfg.Cassandra.Hosts, ","),
		"CHAT_CASSANDRA_KEYSPACE="+cfg.Cassandra.Keyspace,
		"CHAT_REDIS_URL="+cfg.RedisURL,
		"CHAT_REDIS_CHANNEL_PREFIX="+cfg.RedisChannelPrefix,
		"CHAT_PRESENCE_TTL="+cfg.PresenceTTL.String(),
		"CHAT_PRESENCE_GRACE="+cfg.PresenceGrace.String(),
		"CHAT_FILES="+cfg.Files,
		"CHAT_S3_URL="+cfg.S3URL,
		"CHAT_UNSENT_FILE_TTL="+cfg.FileLimits.UnattachedTTL.String(),
		"CHAT_FILE_SWEEP_INTERVAL="+cfg.FileSweepInterval.String(),
		"CHAT_ALLOW_LOOPBACK_TARGETS="+strconv.FormatBool(cfg.PushAllowLoopback),
		"CHAT_SMTP_URL="+cfg.SMTPURL,
		"CHAT_PUBLIC_URL="+cfg.PublicURL,
		"CHAT_EMAIL_DIGEST_AFTER="+cfg.EmailDigestAfter.String(),
		"CHAT_EMAIL_DIGEST_EVERY="+cfg.EmailDigestEvery.String(),
	)
}

// rateLimitVars are the CHAT_* variables of the rate limits (see the
// server's configuration), one per action: TestRateLimitVars checks them.
var rateLimitVars = map[ratelimit.Action]string{
	ratelimit.Post:          "CHAT_RATE_POSTS",
	ratelimit.RoomChange:    "CHAT_RATE_ROOM_CHANGES",
	ratelimit.DirectMessage: "CHAT_RATE_DIRECT_MESSAGES",
	ratelimit.Typing:        "CHAT_RATE_TYPING",
	ratelimit.Signup:        "CHAT_RATE_SIGNUPS_PER_ADDRESS",
	ratelimit.Login:         "CHAT_RATE_LOGINS_PER_LOGIN",
	ratelimit.LoginAddress:  "CHAT_RATE_LOGINS_PER_ADDRESS",
	ratelimit.Upload:        "CHAT_RATE_UPLOADS",
	ratelimit.EmailTo:       "CHAT_RATE_EMAILS_PER_RECIPIENT",
	ratelimit.EmailRequest:  "CHAT_RATE_EMAIL_REQUESTS_PER_ADDRESS",
	ratelimit.Search:        "CHAT_RATE_SEARCHES",
	ratelimit.Account:       "CHAT_RATE_ACCOUNT_CHANGES",
	ratelimit.SecondFactor:  "CHAT_RATE_CODES_PER_LOGIN",
}

// TestRateLimitVars: the server reads each action's limit from its
// variable in rateLimitVars, so a server process gets the limits of the
// configuration it is started with.
func TestRateLimitVars(t *testing.T) {
	env := map[string]string{}
	want := ratelimit.DefaultLimits
	for i, a := range ratelimit.Actions() {
		v, ok := rateLimitVars[a]
		if !ok {
			t.Fatalf("no variable for the rate limit of %s", a.Name())
		}
		want[a] = ratelimit.Limit{Rate: i + 1, Period: time.Hour, Burst: i + 2}
		env[v] = want[a].String()
	}
	cfg, err := server.ParseConfig(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateLimits != want {
		t.Fatalf("limits %v, want %v", cfg.RateLimits, want)
	}
}

// terminate sends SIGTERM and waits for the process to exit. It returns the
// exit status and how long the exit took.
func (p *chatqlProcess) terminate(t *testing.T) (status int, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("chatql still running 2 minutes after SIGTERM")
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
}

// servingLine is the log line of a server ready to serve, with its address.
var servingLine = regexp.MustCompile(`msg="chatql serving" playground=(http://[^/ ]+)/`)

// processLog keeps a process's log and sends the address it serves on to
// serving, once.
type processLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	serving chan string
	found   bool
}

func (l *processLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	if m := servingLine.FindSubmatch(l.buf.Bytes()); m != nil && !l.found {
		l.found = true
		l.serving <- string(m[1])
	}
	return len(b), nil
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

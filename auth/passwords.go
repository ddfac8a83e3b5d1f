package auth

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"
)

// ErrBusy means the server is hashing as many passwords as it allows and
// as many more are waiting: the client should try again shortly.
var ErrBusy = errors.New("too many logins and signups at once; try again in a moment")

// Passwords hashes and checks passwords with bcrypt. A bcrypt hash holds a
// core for tens of milliseconds, so at most Limit run at once (one per
// core: the rest of the server keeps running between them) and at most
// QueueLimit more wait, each until its context ends; past that, callers
// get ErrBusy at once instead of piling up.
type Passwords struct {
	cost  int
	dummy []byte // a hash to check against when the login is unknown

	slots      chan struct{} // a token per hash running
	waiting    atomic.Int64
	queueLimit int64

	// running and peak count the hashes under way, for tests and metrics.
	running, peak atomic.Int64

	// hash and compare are bcrypt's; tests replace them to watch the bound.
	hash    func(password []byte, cost int) ([]byte, error)
	compare func(hash, password []byte) error
}

// QueuePerSlot is how many callers may wait per hashing slot.
const QueuePerSlot = 32

// NewPasswords returns a hasher of the given bcrypt cost (bcrypt.DefaultCost
// in production; tests may use bcrypt.MinCost) running at most GOMAXPROCS
// hashes at once.
func NewPasswords(cost int) (*Passwords, error) {
	return newPasswords(cost, runtime.GOMAXPROCS(0))
}

func newPasswords(cost, limit int) (*Passwords, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("no such user, no such password"), cost)
	if err != nil {
		return nil, fmt.Errorf("auth: bcrypt cost %d: %w", cost, err)
	}
	return &Passwords{
		cost:       cost,
		dummy:      dummy,
		slots:      make(chan struct{}, limit),
		queueLimit: int64(limit * QueuePerSlot),
		hash:       bcrypt.GenerateFromPassword,
		compare:    bcrypt.CompareHashAndPassword,
	}, nil
}

// Limit is how many hashes may run at once.
func (p *Passwords) Limit() int { return cap(p.slots) }

// PeakRunning is the most hashes that ever ran at once.
func (p *Passwords) PeakRunning() int { return int(p.peak.Load()) }

// run calls work in a hashing slot, waiting for one while ctx lasts.
func (p *Passwords) run(ctx context.Context, work func()) error {
	select {
	case p.slots <- struct{}{}:
	default:
		if p.waiting.Add(1) > p.queueLimit {
			p.waiting.Add(-1)
			return ErrBusy
		}
		select {
		case p.slots <- struct{}{}:
			p.waiting.Add(-1)
		case <-ctx.Done():
			p.waiting.Add(-1)
			return ctx.Err()
		}
	}
	n := p.running.Add(1)
	for {
		peak := p.peak.Load()
		if n <= peak || p.peak.CompareAndSwap(peak, n) {
			break
		}
	}
	defer func() {
		p.running.Add(-1)
		<-p.slots
	}()
	work()
	return nil
}

// Hash returns the slow hash to store for password.
func (p *Passwords) Hash(ctx context.Context, password string) ([]byte, error) {
	var h []byte
	var err error
	if rerr := p.run(ctx, func() { h, err = p.hash([]byte(password), p.cost) }); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	return h, nil
}

// Check returns nil if password matches hash. A nil hash (unknown login) is
// checked against a dummy hash, so both failures take the same time and the
// response does not reveal which logins exist.
func (p *Passwords) Check(ctx context.Context, hash []byte, password string) error {
	known := hash != nil
	if !known {
		hash = p.dummy
	}
	var err error
	if rerr := p.run(ctx, func() { err = p.compare(hash, []byte(password)) }); rerr != nil {
		return rerr
	}
	if err != nil || !known {
		return fmt.Errorf("%w: wrong login or password", ErrUnauthenticated)
	}
	return nil
}

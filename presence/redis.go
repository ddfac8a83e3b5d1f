package presence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTTL is how long an instance's records outlive its last heartbeat:
// the users of an instance that died (kill -9, a lost host) are told
// offline at most DefaultTTL plus one heartbeat (DefaultTTL/3) after it
// died.
const DefaultTTL = 15 * time.Second

// Redis is the registry of instances that share a Redis. Its keys, all in
// one hash slot (the {prefix presence} tag) so that its scripts also run on
// Redis Cluster:
//
//	{p presence}:instances      sorted set: instance id → its last heartbeat (Unix ms, Redis's clock)
//	{p presence}:user:<login>   set of the instances the user is online through
//	{p presence}:inst:<id>      set of the logins online through the instance
//	{p presence}:draining       set of the dead instances whose records are being taken apart
//
// A user is online while one of their instances is alive: its heartbeat is
// younger than TTL. Every script runs atomically, so of two instances
// recording the same user at once, exactly one tells each change. Each
// instance heartbeats every TTL/3 and sweeps the instances whose heartbeat
// is older than TTL: the first to sweep one claims it, and sweepers take its
// records apart a batch at a time (each user once), telling its users who
// are offline everywhere now.
type Redis struct {
	rdb redis.UniversalClient
	id  string
	// tag is the key prefix, hash tag included.
	tag string
	ttl time.Duration
	log *slog.Logger
	// stale: a write of this instance's records failed, so the next
	// heartbeat writes them all again.
	stale atomic.Bool
}

// NewRedis returns the registry of this instance on rdb, its keys under
// prefix (the deployment's channel prefix); ttl 0 is DefaultTTL.
func NewRedis(rdb redis.UniversalClient, prefix string, ttl time.Duration, log *slog.Logger) *Redis {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Redis{rdb: rdb, id: hex.EncodeToString(id[:]), tag: "{" + prefix + "presence}", ttl: cmpOr(ttl, DefaultTTL), log: log}
}

// ID is this instance's id in the registry.
func (r *Redis) ID() string { return r.id }

func (r *Redis) instancesKey() string         { return r.tag + ":instances" }
func (r *Redis) userKey(login string) string  { return r.tag + ":user:" + login }
func (r *Redis) instanceKey(id string) string { return r.tag + ":inst:" + id }
func (r *Redis) ttlMillis() string            { return strconv.FormatInt(r.ttl.Milliseconds(), 10) }
func (r *Redis) fail(what string, err error) error {
	r.stale.Store(true)
	return fmt.Errorf("presence: %s: %w", what, err)
}

// The scripts share aliveOthers: whether the user set KEYS[2] holds an
// instance other than ARGV[1] whose heartbeat in KEYS[1] is younger than
// ARGV[2] ms, by Redis's clock.
const aliveOthers = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function alive_others(instances, user, self, ttl)
  local oldest = now_ms() - ttl
  for _, id in ipairs(redis.call('SMEMBERS', user)) do
    if id ~= self then
      local beat = redis.call('ZSCORE', instances, id)
      if beat and tonumber(beat) >= oldest then return true end
    end
  end
  return false
end
`

// arrive: KEYS instances, user, instance; ARGV id, ttl, login. Returns 1
// if the user was offline everywhere.
var arriveScript = redis.NewScript(aliveOthers + `
local was_offline = not alive_others(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]))
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('ZADD', KEYS[1], 'GT', now_ms(), ARGV[1])
if was_offline then return 1 end
return 0
`)

// depart: KEYS instances, user, instance; ARGV id, ttl, login. Returns 1
// if the user is offline everywhere now.
var departScript = redis.NewScript(aliveOthers + `
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[3])
if alive_others(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])) then return 0 end
return 1
`)

// online: KEYS instances, user...; ARGV ttl. Returns 1 or 0 per user.
var onlineScript = redis.NewScript(aliveOthers + `
local out = {}
for i = 2, #KEYS do
  out[i - 1] = alive_others(KEYS[1], KEYS[i], '', tonumber(ARGV[1])) and 1 or 0
end
return out
`)

// heartbeat: KEYS instances, instance; ARGV id. Returns whether the
// instance's records exist.
var heartbeatScript = redis.NewScript(aliveOthers + `
redis.call('ZADD', KEYS[1], now_ms(), ARGV[1])
return redis.call('EXISTS', KEYS[2])
`)

// claimDead: KEYS instances, draining; ARGV ttl. Moves every instance
// whose heartbeat is older than ttl from instances to draining, where
// drainScript takes its records apart, a batch at a time, so that no
// script holds Redis up for long however many users a dead instance had,
// and an instance dying while it drains leaves the rest to the next sweep.
var claimDead = redis.NewScript(aliveOthers + `
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now_ms() - tonumber(ARGV[1])))) do
  redis.call('ZREM', KEYS[1], dead)
  redis.call('SADD', KEYS[2], dead)
end
return 0
`)

// drainScript: KEYS instances, draining, the dead instance's set; ARGV its
// id, ttl, tag, batch. Removes up to batch of its users' records and
// returns {users left, users of the batch who are offline everywhere now};
// once none is left, the instance leaves draining.
var drainScript = redis.NewScript(aliveOthers + `
local gone = {}
for _, login in ipairs(redis.call('SPOP', KEYS[3], tonumber(ARGV[4]))) do
  local user = ARGV[3] .. ':user:' .. login
  redis.call('SREM', user, ARGV[1])
  if not alive_others(KEYS[1], user, '', tonumber(ARGV[2])) then gone[#gone + 1] = login end
end
local left = redis.call('SCARD', KEYS[3])
if left == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return {left, gone}
`)

// drainBatch is how many of a dead instance's users one drainScript takes.
const drainBatch = 500

func (r *Redis) Arrive(ctx context.Context, login string) (bool, error) {
	n, err := arriveScript.Run(ctx, r.rdb, []string{r.instancesKey(), r.userKey(login), r.instanceKey(r.id)}, r.id, r.ttlMillis(), login).Int()
	if err != nil {
		return false, r.fail("record "+login+" online", err)
	}
	return n == 1, nil
}

func (r *Redis) Depart(ctx context.Context, login string) (bool, error) {
	n, err := departScript.Run(ctx, r.rdb, []string{r.instancesKey(), r.userKey(login), r.instanceKey(r.id)}, r.id, r.ttlMillis(), login).Int()
	if err != nil {
		return false, r.fail("record "+login+" offline", err)
	}
	return n == 1, nil
}

func (r *Redis) Online(ctx context.Context, logins []string) ([]bool, error) {
	if len(logins) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(logins)+1)
	keys = append(keys, r.instancesKey())
	for _, login := range logins {
		keys = append(keys, r.userKey(login))
	}
	flags, err := onlineScript.Run(ctx, r.rdb, keys, r.ttlMillis()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("presence: read who is online: %w", err)
	}
	out := make([]bool, len(logins))
	for i := range out {
		out[i] = i < len(flags) && flags[i] == 1
	}
	return out, nil
}

// Run heartbeats every TTL/3 and sweeps dead instances, until ctx ends;
// then it removes this instance's records, so that its users who have no
// other instance are offline at once (they were told by their own
// departures, which the server's shutdown ran first).
func (r *Redis) Run(ctx context.Context, local func() []string, gone func(login string)) {
	tick := time.NewTicker(r.ttl / 3)
	defer tick.Stop()
	for {
		r.heartbeat(ctx, local, gone)
		select {
		case <-ctx.Done():
			r.leave()
			return
		case <-tick.C:
		}
	}
}

func (r *Redis) heartbeat(ctx context.Context, local func() []string, gone func(string)) {
	ctx, cancel := context.WithTimeout(ctx, r.ttl/3)
	defer cancel()
	exists, err := heartbeatScript.Run(ctx, r.rdb, []string{r.instancesKey(), r.instanceKey(r.id)}, r.id).Int()
	if err != nil {
		r.stale.Store(true)
		r.log.Warn("presence: heartbeat failed; this instance's users may show offline until Redis answers", "err", err)
		return
	}
	// Redis lost the records (a restart without persistence), or a write
	// of them failed: write them all again.
	if exists == 0 || r.stale.Load() {
		r.stale.Store(false)
		if err := r.rewrite(ctx, local()); err != nil {
			r.stale.Store(true)
			r.log.Warn("presence: rewriting this instance's records failed", "err", err)
		}
	}
	if err := r.sweep(ctx, gone); err != nil {
		r.log.Warn("presence: sweeping dead instances failed; the next heartbeat goes on", "err", err)
	}
}

// sweep claims the dead instances and drains every claimed one (those
// another sweeper left half done included), handing their users who are
// offline everywhere now to gone.
func (r *Redis) sweep(ctx context.Context, gone func(string)) error {
	draining := r.tag + ":draining"
	if err := claimDead.Run(ctx, r.rdb, []string{r.instancesKey(), draining}, r.ttlMillis()).Err(); err != nil {
		return err
	}
	dead, err := r.rdb.SMembers(ctx, draining).Result()
	if err != nil {
		return err
	}
	for _, id := range dead {
		for left := int64(1); left > 0; {
			res, err := drainScript.Run(ctx, r.rdb, []string{r.instancesKey(), draining, r.instanceKey(id)}, id, r.ttlMillis(), r.tag, drainBatch).Slice()
			if err != nil {
				return err
			}
			if len(res) != 2 {
				return fmt.Errorf("presence: drain returned %v", res)
			}
			left, _ = res[0].(int64)
			logins, _ := res[1].([]any)
			for _, login := range logins {
				if s, ok := login.(string); ok {
					gone(s)
				}
			}
		}
	}
	return nil
}

// rewrite makes this instance's records hold exactly logins.
func (r *Redis) rewrite(ctx context.Context, logins []string) error {
	held, err := r.rdb.SMembers(ctx, r.instanceKey(r.id)).Result()
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(logins))
	for _, login := range logins {
		want[login] = true
	}
	pipe := r.rdb.Pipeline()
	for _, login := range held {
		if !want[login] {
			pipe.SRem(ctx, r.userKey(login), r.id)
			pipe.SRem(ctx, r.instanceKey(r.id), login)
		}
	}
	for _, login := range logins {
		pipe.SAdd(ctx, r.userKey(login), r.id)
		pipe.SAdd(ctx, r.instanceKey(r.id), login)
	}
	_, err = pipe.Exec(ctx)
	return err
}

// leave removes this instance and its records.
func (r *Redis) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	if err := r.rewrite(ctx, nil); err != nil {
		r.log.Warn("presence: removing this instance's records failed; they expire with its heartbeat", "err", err)
	}
	r.rdb.ZRem(ctx, r.instancesKey(), r.id)
}

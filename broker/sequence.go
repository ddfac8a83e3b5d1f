package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/store"
)

// Sequencer is a broker that numbers each room's logged events as it
// carries them (store.Seq): the order every instance's subscribers get
// them in, whichever instance published them. It remembers the ids of a
// room's latest events by number, so that a stream resuming after one of
// them (or catching up after a gap) reads exactly the events that followed
// it, in that order, from the store's log.
type Sequencer interface {
	// SequenceAfter returns the places of up to limit of room's events that
	// followed at in its sequence, in order; at without a place (a
	// message's cursor from a page of history) is looked up by its id. ok
	// is false when the sequence no longer holds at (it was reset, at fell
	// out of the ids kept, or at names another event there): the caller
	// then reads the log by id.
	SequenceAfter(ctx context.Context, room string, at store.Cursor, limit int) (next []store.Cursor, ok bool, err error)
}

// How much of a room's sequence Redis keeps: the ids of the last
// sequenceKept events, for sequenceTTL after the room's last event. A
// stream that resumes from an event older than that reads the log by id.
const (
	sequenceKept = 1000
	sequenceTTL  = 24 * 60 * 60 * 1000 // milliseconds
)

// publishSequencedScript numbers the event ARGV[2] (its id) in its room's
// sequence, remembers its id by number, and publishes ARGV[1] (its wire
// encoding, a JSON object) to the channel KEYS[1] with ARGV[4] (PUBLISH or
// SPUBLISH), its place written in: {"seq":n,"ep":"epoch",...}. The
// sequence's hash KEYS[2] holds the last number n and the epoch e, which
// the first event of a new sequence takes from ARGV[3]; the sorted set
// KEYS[3] holds the ids by number. All three share the channel's hash slot.
var publishSequencedScript = redis.NewScript(`
local n = redis.call('HINCRBY', KEYS[2], 'n', 1)
local e = redis.call('HGET', KEYS[2], 'e')
if not e then
  e = ARGV[3]
  redis.call('HSET', KEYS[2], 'e', e)
  redis.call('DEL', KEYS[3])
end
redis.call('ZADD', KEYS[3], n, ARGV[2])
if n % 32 == 0 then redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -` + strconv.Itoa(sequenceKept+1) + `) end
redis.call('PEXPIRE', KEYS[2], ` + strconv.Itoa(sequenceTTL) + `)
redis.call('PEXPIRE', KEYS[3], ` + strconv.Itoa(sequenceTTL) + `)
return redis.call(ARGV[4], KEYS[1], '{"seq":' .. n .. ',"ep":"' .. e .. '",' .. string.sub(ARGV[1], 2))
`)

// resetSequenceScript ends a room's sequence (KEYS[2], KEYS[3]) and
// publishes ARGV[1] (a Resync) to KEYS[1] with ARGV[2]: an instance lost
// events of the room, which the sequence does not hold, so no place in it
// may say any longer what came after it.
var resetSequenceScript = redis.NewScript(`
redis.call('DEL', KEYS[2], KEYS[3])
return redis.call(ARGV[2], KEYS[1], ARGV[1])
`)

// sequenceAfterScript returns the epoch of the sequence KEYS[1] and the
// ids and numbers from ARGV[1] on of its sorted set KEYS[2], at most ARGV[2]
// of them; from the number of the id ARGV[3] when ARGV[1] is 0; nil if
// there is no sequence, or the id has no number.
var sequenceAfterScript = redis.NewScript(`
local e = redis.call('HGET', KEYS[1], 'e')
if not e then return false end
local n = ARGV[1]
if n == '0' then
  n = redis.call('ZSCORE', KEYS[2], ARGV[3])
  if not n then return false end
end
return {e, redis.call('ZRANGE', KEYS[2], n, '+inf', 'BYSCORE', 'LIMIT', 0, ARGV[2], 'WITHSCORES')}
`)

// sequenceKeys are the keys of topic's sequence, in the hash slot of its
// channel.
func (r *Redis) sequenceKeys(topic string) (hash, ids string) {
	ch := r.channel(topic)
	at := len(r.prefix)
	if r.sharded {
		at = strings.IndexByte(ch, '}') + 1
	}
	return ch[:at] + "seq:" + ch[at:], ch[:at] + "seqids:" + ch[at:]
}

// sequenced reports whether topic's logged events are numbered: a room's
// are.
func sequenced(topic string) bool { return strings.HasPrefix(topic, "room:") }

// publishCommand is the command that publishes to a channel in this mode.
func (r *Redis) publishCommand() string {
	if r.sharded {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// newEpoch names a new sequence.
func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// queueSequenced publishes payload, the event id's encoding, numbered in
// topic's sequence.
func (r *Redis) queueSequenced(ctx context.Context, pipe redis.Pipeliner, topic, id string, payload []byte) {
	hash, ids := r.sequenceKeys(topic)
	publishSequencedScript.Eval(ctx, pipe, []string{r.channel(topic), hash, ids}, payload, id, newEpoch(), r.publishCommand())
}

// SequenceAfter reads room's sequence after at (see Sequencer).
func (r *Redis) SequenceAfter(ctx context.Context, room string, at store.Cursor, limit int) ([]store.Cursor, bool, error) {
	hash, ids := r.sequenceKeys(RoomTopic(room))
	res, err := sequenceAfterScript.Run(ctx, r.client, []string{hash, ids}, at.Seq.N, limit+1, at.ID.String()).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis broker: read the sequence of room %q: %w", room, withoutURL(err))
	}
	if len(res) != 2 {
		return nil, false, fmt.Errorf("redis broker: the sequence of room %q reads as %v", room, res)
	}
	epoch, _ := res[0].(string)
	entries, _ := res[1].([]any)
	if !at.Seq.IsZero() && epoch != at.Seq.Epoch || len(entries) < 2 {
		return nil, false, nil
	}
	places := make([]store.Cursor, 0, len(entries)/2)
	for i := 0; i+1 < len(entries); i += 2 {
		idText, _ := entries[i].(string)
		nText, _ := entries[i+1].(string)
		id, err := store.ParseMessageID(idText)
		n, nErr := strconv.ParseUint(nText, 10, 64)
		if err != nil || nErr != nil {
			return nil, false, fmt.Errorf("redis broker: the sequence of room %q holds %q at %q", room, idText, nText)
		}
		places = append(places, store.Cursor{ID: id, Seq: store.Seq{Epoch: epoch, N: n}})
	}
	if places[0].ID != at.ID || !at.Seq.IsZero() && places[0] != at {
		// at fell out of the ids kept, or the sequence was lost and
		// started again under the same epoch (a failover that lost writes).
		return nil, false, nil
	}
	return places[1:], true, nil
}

package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/store"
)

// Sequencer is a broker that numbers each room's logged events as it
// carries them (store.Cursor): the order every instance's subscribers get
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

// How much of a room's sequence Redis keeps: the ids of its last
// sequenceKept events (about 100 kB), until sequenceTTL after every 32nd
// event. A stream that resumes from an event older than that reads the log
// by id.
const (
	sequenceKept = 1000
	sequenceTTL  = 24 * 60 * 60 * 1000 // milliseconds
)

// publishSequencedScript numbers the event ARGV[2] (its id) in its room's
// sequence, keeps its id by number, and publishes ARGV[1] (its wire
// encoding, a JSON object without its opening brace) to the channel KEYS[1]
// with ARGV[3] (PUBLISH or SPUBLISH), its place written first:
// {"seq":n,... The counter KEYS[2] holds the last number, the sorted set
// KEYS[3] the ids by number; all three share the channel's hash slot. It
// does what it must per event and no more: every redis.call costs the
// script about a microsecond.
var publishSequencedScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[2])
if n == 1 then redis.call('DEL', KEYS[3]) end
redis.call('ZADD', KEYS[3], n, ARGV[2])
if n % 32 == 1 then
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -` + strconv.Itoa(sequenceKept+1) + `)
  redis.call('PEXPIRE', KEYS[2], ` + strconv.Itoa(sequenceTTL) + `)
  redis.call('PEXPIRE', KEYS[3], ` + strconv.Itoa(sequenceTTL) + `)
end
return redis.call(ARGV[3], KEYS[1], '{"seq":' .. n .. ',' .. ARGV[1])
`)

// resetSequenceScript ends a room's sequence (KEYS[2], KEYS[3]) and
// publishes ARGV[1] (a Resync) to KEYS[1] with ARGV[2]: an instance lost
// events of the room, which the sequence does not hold, so no place in it
// may say any longer what came after it.
var resetSequenceScript = redis.NewScript(`
redis.call('DEL', KEYS[2], KEYS[3])
return redis.call(ARGV[2], KEYS[1], ARGV[1])
`)

// sequenceKeys are the keys of the scripts of topic's sequence: its
// channel, then its counter and its ids, in the channel's hash slot.
func (r *Redis) sequenceKeys(topic string) []string {
	ch := r.channel(topic)
	at := len(r.prefix)
	if r.sharded {
		at = strings.IndexByte(ch, '}') + 1
	}
	return []string{ch, ch[:at] + "seq:" + ch[at:], ch[:at] + "seqids:" + ch[at:]}
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

// queueSequenced publishes payload, the event id's encoding, numbered in
// topic's sequence.
func (r *Redis) queueSequenced(ctx context.Context, pipe redis.Pipeliner, topic, id string, payload []byte) *scriptRun {
	return queueScript(ctx, pipe, publishSequencedScript, r.sequenceKeys(topic), payload[1:], id, r.publishCommand())
}

// scriptRun is a script queued in a pipeline by its hash (EVALSHA), to be
// run again in full on a node that has not cached it.
type scriptRun struct {
	script *redis.Script
	keys   []string
	args   []any
}

// queueScript queues script by its hash.
func queueScript(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, args ...any) *scriptRun {
	script.EvalSha(ctx, pipe, keys, args...)
	return &scriptRun{script: script, keys: keys, args: args}
}

// runUncached runs again in full the scripts of a pipeline that a node had
// not cached (a new node, or one restarted or failed over: NOSCRIPT), in
// their order, which caches them there; a NOSCRIPT script did nothing, so
// nothing runs twice. It returns err, the pipeline's, if any command
// failed otherwise.
func (r *Redis) runUncached(ctx context.Context, cmds []redis.Cmder, runs []*scriptRun, err error) error {
	var again []*scriptRun
	for i, c := range cmds {
		switch {
		case c.Err() == nil:
		case i < len(runs) && runs[i] != nil && redis.HasErrorPrefix(c.Err(), "NOSCRIPT"):
			again = append(again, runs[i])
		default:
			return err
		}
	}
	pipe := r.client.Pipeline()
	for _, run := range again {
		run.script.Eval(ctx, pipe, run.keys, run.args...)
	}
	_, err = pipe.Exec(ctx)
	return err
}

// SequenceAfter reads room's sequence after at (see Sequencer).
func (r *Redis) SequenceAfter(ctx context.Context, room string, at store.Cursor, limit int) ([]store.Cursor, bool, error) {
	ids := r.sequenceKeys(RoomTopic(room))[2]
	n := at.Seq
	if n == 0 {
		score, err := r.client.ZScore(ctx, ids, at.ID.String()).Result()
		if errors.Is(err, redis.Nil) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("redis broker: read the sequence of room %q: %w", room, withoutURL(err))
		}
		n = uint64(score)
	}
	entries, err := r.client.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
		Key: ids, Start: n, Stop: "+inf", ByScore: true, Count: int64(limit) + 1,
	}).Result()
	if err != nil {
		return nil, false, fmt.Errorf("redis broker: read the sequence of room %q: %w", room, withoutURL(err))
	}
	places := make([]store.Cursor, 0, len(entries))
	for _, e := range entries {
		idText, _ := e.Member.(string)
		id, err := store.ParseMessageID(idText)
		if err != nil {
			return nil, false, fmt.Errorf("redis broker: the sequence of room %q holds %q", room, idText)
		}
		places = append(places, store.Cursor{ID: id, Seq: uint64(e.Score)})
	}
	if len(places) == 0 || places[0].ID != at.ID || places[0].Seq != n {
		// at fell out of the ids kept, or the sequence was lost or ended
		// and started again, or another event is there.
		return nil, false, nil
	}
	return places[1:], true, nil
}

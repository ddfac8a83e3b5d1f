package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

func TestClusterDeliversAcrossInstances(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{})

	sub := cl.instances[1].subscribe(t, bob, chatclient.GraphQLTransportWS, "across", nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "across", "c": "from A"}, nil)
	if ev := nextAfterJoins(t, sub); ev.Message == nil || ev.Message.Content != "from A" {
		t.Fatalf("subscriber on B got %+v", ev)
	}
}

func TestClusterFanOutInOrder(t *testing.T) {
	cl := startCluster(t, 2, redisURL(t))
	poster := cl.instances[0].user(t, "poster")
	mustDo(t, poster, createRoom, map[string]any{"n": "fanout"}, nil)
	const subscribers, messages = 20, 100
	subs := make([]*chatclient.Subscription, subscribers)
	for i := range subs {
		reader := cl.on(i%2, cl.instances[0].user(t, fmt.Sprintf("reader%02d", i)))
		mustDo(t, reader, joinRoom, map[string]any{"r": "fanout"}, nil)
		subs[i] = cl.instances[i%2].subscribe(t, reader, chatclient.GraphQLTransportWS, "fanout", nil)
	}
	var received [subscribers][]string
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for len(received[i]) < messages {
				ev, err := nextRoomEvent(ctx, sub)
				if err != nil {
					t.Errorf("subscriber %d after %d messages: %v", i, len(received[i]), err)
					return
				}
				if ev.Kind == "MESSAGE_POSTED" {
					received[i] = append(received[i], ev.Message.Content)
				}
			}
		}()
	}
	var want []string
	for n := range messages {
		content := fmt.Sprintf("m%03d", n)
		want = append(want, content)
		mustDo(t, poster, postMessage, map[string]any{"r": "fanout", "c": content}, nil)
	}
	wg.Wait()
	for i, got := range received {
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("subscriber %d (instance %d) got %d messages out of order or incomplete: %v", i, i%2, len(got), got)
		}
	}
}

// nextRoomEvent reads one event, without failing the test from a goroutine.
func nextRoomEvent(ctx context.Context, sub *chatclient.Subscription) (roomEvent, error) {
	resp, err := sub.Next(ctx)
	if err != nil {
		return roomEvent{}, err
	}
	var out struct{ RoomEvents roomEvent }
	err = json.Unmarshal(resp.Data, &out)
	return out.RoomEvents, err
}

// TestClusterSurvivesRedisRestart restarts Redis while messages are posted:
// subscribers that stay connected catch up from the store on their own, a
// client that reconnects resumes from its cursor, and each ends with every
// message exactly once, in order.
func TestClusterSurvivesRedisRestart(t *testing.T) {
	redisURL(t) // skip or fail like the other Redis tests
	rs := startPrivateRedis(t)
	cl := startCluster(t, 2, rs.url())
	poster := cl.instances[0].user(t, "poster")
	mustDo(t, poster, createRoom, map[string]any{"n": "outage"}, nil)
	stayer := cl.on(1, cl.instances[0].user(t, "stayer"))
	leaver := cl.on(0, cl.instances[0].user(t, "leaver"))
	for _, c := range []*chatclient.Client{stayer, leaver} {
		mustDo(t, c, joinRoom, map[string]any{"r": "outage"}, nil)
	}
	stays := cl.instances[1].subscribe(t, stayer, chatclient.GraphQLTransportWS, "outage", nil)
	leaves := cl.instances[0].subscribe(t, leaver, chatclient.GraphQLTransportWS, "outage", nil)

	var want []string
	post := func(from, to int) {
		for n := from; n < to; n++ {
			content := fmt.Sprintf("m%03d", n)
			want = append(want, content)
			mustDo(t, poster, postMessage, map[string]any{"r": "outage", "c": content}, nil)
		}
	}
	read := func(sub *chatclient.Subscription, got *[]string, cursor *string, until int) {
		t.Helper()
		for len(*got) < until {
			ev := nextEvent(t, sub)
			if ev.Kind == "MESSAGE_POSTED" {
				*got = append(*got, ev.Message.Content)
				*cursor = *ev.Cursor
			}
		}
	}
	var stayed, left []string
	var stayedCursor, leftCursor string
	post(0, 20)
	read(stays, &stayed, &stayedCursor, 20)
	read(leaves, &left, &leftCursor, 20)

	rs.stop(t)
	leaves.Close()
	post(20, 40) // stored; the broker cannot publish them
	rs.start(t)
	post(40, 60)

	resumed := cl.instances[0].subscribe(t, leaver, chatclient.GraphQLTransportWS, "outage", leftCursor)
	read(stays, &stayed, &stayedCursor, 60)
	read(resumed, &left, &leftCursor, 60)
	for name, got := range map[string][]string{"stayed connected": stayed, "resumed from cursor": left} {
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: got %v\nwant %v", name, got, want)
		}
	}
	// Nothing more is pending: no duplicate arrives late.
	post(60, 61)
	for _, sub := range []*chatclient.Subscription{stays, resumed} {
		if ev := nextEvent(t, sub); ev.Message == nil || ev.Message.Content != "m060" {
			t.Errorf("after the restart: got %+v, want m060", ev)
		}
	}
}

// An instance answers a post once its event has left for the other
// instances: while Redis pauses its writers, the answer waits out the
// pause. So an instance that dies the moment it answers cannot take the
// event with it, out of reach of the subscribers elsewhere (who would see
// no gap and never catch up on it).
func TestClusterAnswersOnceEventsLeft(t *testing.T) {
	redisURL(t) // skip or fail like the other Redis tests
	rs := startPrivateRedis(t)
	cl, alice, bob := acrossCluster(t, across{redisURL: rs.url(), room: "acked"})
	sub := cl.instances[1].subscribe(t, bob, chatclient.GraphQLTransportWS, "acked", nil)

	admin := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + rs.port})
	defer admin.Close()
	const pause = 600 * time.Millisecond
	if err := admin.Do(testContext(t), "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	paused := time.Now()
	mustDo(t, alice, postMessage, map[string]any{"r": "acked", "c": "held"}, nil)
	if waited := time.Since(paused); waited < pause*3/4 {
		t.Errorf("postMessage answered %v into Redis's %v pause of writes: before its event left the instance", waited, pause)
	}
	if ev := nextAfterJoins(t, sub); ev.Message == nil || ev.Message.Content != "held" {
		t.Fatalf("subscriber on the other instance got %+v, want the post", ev)
	}
}

// TestClusterSubscriptionChurn opens and closes 1,000 subscriptions over two
// instances: neither holds anything of theirs afterwards, nor does Redis
// keep any of the cluster's channels subscribed but the one every instance
// follows for as long as it runs (profile announcements).
func TestClusterSubscriptionChurn(t *testing.T) {
	url := redisURL(t)
	cl := startCluster(t, 2, url)
	alice := cl.instances[0].user(t, "alice")
	for i := range 4 {
		mustDo(t, alice, createRoom, map[string]any{"n": fmt.Sprintf("churn-%d", i)}, nil)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	channels := func() int {
		chs, err := rdb.PubSubChannels(context.Background(), cl.prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(slices.DeleteFunc(chs, func(ch string) bool { return ch == cl.prefix+broker.AnnouncementsTopic }))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 1000 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := cl.on(i%2, alice)
			sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": fmt.Sprintf("churn-%d", i%4)})
			if err != nil {
				t.Error(err)
				return
			}
			sub.Close()
		}()
	}
	wg.Wait()
	waitFor(t, func() bool {
		return cl.instances[0].Released() && cl.instances[1].Released() && channels() == 0
	})
}

// A change made on one instance reaches a subscriber on another as it is:
// an edit with its editedAt, a deletion as a tombstone, a reply with its
// thread.
func TestClusterMessageChanges(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{})
	const sub = `subscription($r: String!) { roomEvents(room: $r) { kind message { id content editedAt deleted replyToId } } }`
	live := cl.instances[1].live(t, bob, sub, map[string]any{"r": "across"})
	type message struct {
		ID, Content string
		EditedAt    *string
		Deleted     bool
		ReplyToID   *string
	}
	next := func() (string, message) {
		t.Helper()
		var out struct {
			RoomEvents struct {
				Kind    string
				Message message
			}
		}
		for out.RoomEvents.Kind == "" || out.RoomEvents.Kind == "PARTICIPANT_JOINED" { // bob's join may come late
			nextData(t, live, &out)
		}
		return out.RoomEvents.Kind, out.RoomEvents.Message
	}

	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "across", "c": "first draft"}, &posted)
	id := posted.PostMessage.ID
	if kind, m := next(); kind != "MESSAGE_POSTED" || m.ID != id {
		t.Fatalf("post on instance B: %s %+v", kind, m)
	}
	var edited struct{ EditMessage changedMessage }
	mustDo(t, alice, editQ, map[string]any{"id": id, "c": "second draft"}, &edited)
	if kind, m := next(); kind != "MESSAGE_EDITED" || m.Content != "second draft" || m.EditedAt == nil || *m.EditedAt != *edited.EditMessage.EditedAt {
		t.Fatalf("edit on instance B: %s %+v, want editedAt %v", kind, m, *edited.EditMessage.EditedAt)
	}
	mustDo(t, alice, replyQ, map[string]any{"r": "across", "c": "a reply", "to": id}, nil)
	if kind, m := next(); kind != "MESSAGE_POSTED" || m.ReplyToID == nil || *m.ReplyToID != id {
		t.Fatalf("reply on instance B: %s %+v, want replyToId %s", kind, m, id)
	}
	mustDo(t, alice, deleteQ, map[string]any{"id": id}, nil)
	if kind, m := next(); kind != "MESSAGE_DELETED" || !m.Deleted || m.Content != "" || m.EditedAt != nil {
		t.Fatalf("delete on instance B: %s %+v, want a tombstone", kind, m)
	}
}

// TestClusterRemovalRefusesPostsElsewhere: a user removed from a room on one
// instance can no longer post through another, though that one cached the
// membership when the user posted (for an hour here, so only the
// instances' announcement over Redis can end it in time).
func TestClusterRemovalRefusesPostsElsewhere(t *testing.T) {
	_, alice, bob := acrossCluster(t, across{configure: func(c *server.Config) { c.MembershipTTL = time.Hour }})
	mustDo(t, bob, postMessage, map[string]any{"r": "across", "c": "cached now"}, nil)
	mustDo(t, alice, removeQ, map[string]any{"r": "across", "l": "bob"}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for accepted := 0; ; accepted++ {
		err := bob.Do(testContext(t), postMessage, map[string]any{"r": "across", "c": "still here?"}, nil)
		var errs chatclient.Errors
		if errors.As(err, &errs) && errs.Code() == "FORBIDDEN" {
			t.Logf("posts accepted after the removal, before its announcement arrived: %d", accepted)
			return
		}
		if err != nil {
			t.Fatalf("post after the removal: %v, want FORBIDDEN", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance B still accepts the removed user's posts after 10s (%d accepted)", accepted)
		}
		time.Sleep(time.Millisecond)
	}
}

package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// benchRoom opens a store in a temporary directory with one room of n
// participants (the room a post or a subscription reads first).
func benchRoom(b *testing.B, n int) (*DB, store.Room) {
	b.Helper()
	ctx := context.Background()
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	creator := store.UserRef{Login: "bench-creator", Firstname: "Bench", Lastname: "Creator"}
	room := store.Room{Name: "bench-room", Creator: creator, CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Participants: []store.UserRef{creator}}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: creator}}); err != nil {
		b.Fatal(err)
	}
	if err := db.CreateRoom(ctx, room); err != nil {
		b.Fatal(err)
	}
	for i := 1; i < n; i++ {
		u := store.UserRef{Login: fmt.Sprintf("bench-user-%04d", i), Firstname: "Bench", Lastname: fmt.Sprintf("User %d", i)}
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := db.JoinRoom(ctx, room.Name, u); err != nil {
			b.Fatal(err)
		}
	}
	return db, room
}

// BenchmarkRoomRead is the read that every postMessage, messages query and
// roomEvents subscription starts with (the participant check): one row
// holding the whole participant set, decoded.
func BenchmarkRoomRead(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			db, room := benchRoom(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := db.Room(ctx, room.Name)
				if err != nil || len(r.Participants) != n {
					b.Fatalf("Room = %d participants, %v", len(r.Participants), err)
				}
			}
		})
	}
}

// BenchmarkPostMessagePath is the store side of postMessage as the
// resolver made it before Membership: the room read (participant check),
// then the write, in a room of 100 participants, from parallel posters.
// BenchmarkPostPath compares it with the check by Membership.
func BenchmarkPostMessagePath(b *testing.B) {
	db, room := benchRoom(b, 100)
	ctx := context.Background()
	author := room.Participants[len(room.Participants)-1]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := db.Room(ctx, room.Name)
			if err != nil || !r.HasParticipant(author.Login) {
				b.Errorf("Room: %v", err)
				return
			}
			m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
			if err := db.PostMessage(ctx, m); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMembership is the participant check as it is made since
// Membership: one point read of a small row (member), or the header and the
// member row through one iterator (outsider, a non-participant), whatever
// the room's size. Compare BenchmarkRoomRead, the check before.
func BenchmarkMembership(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			db, room := benchRoom(b, n)
			ctx := context.Background()
			for _, who := range []struct {
				name, login string
				in          bool
			}{
				{"member", fmt.Sprintf("bench-user-%04d", n/2), true},
				{"outsider", "bench-outsider", false},
			} {
				b.Run(who.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						m, err := db.Membership(ctx, room.Name, who.login)
						if err != nil || m.Participant != who.in {
							b.Fatalf("Membership(%q) = %+v, %v", who.login, m, err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkPostPath is the store side of a post to a public room as the
// resolver makes it, check then write, with either check: check=room reads
// the whole room (the resolver before Membership), check=membership asks
// Membership. Parallel posters, as in BenchmarkPostMessagePath. Each check
// writes to a store of its own, so neither runs on the other's messages.
func BenchmarkPostPath(b *testing.B) {
	ctx := context.Background()
	checks := []struct {
		name  string
		check func(db *DB, room, login string) error
	}{
		{"room", func(db *DB, room, login string) error {
			r, err := db.Room(ctx, room)
			if err == nil && !r.HasParticipant(login) {
				err = fmt.Errorf("%q is no participant", login)
			}
			return err
		}},
		{"membership", func(db *DB, room, login string) error {
			m, err := db.Membership(ctx, room, login)
			if err == nil && !m.Participant {
				err = fmt.Errorf("%q is no participant", login)
			}
			return err
		}},
	}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			for _, c := range checks {
				db, room := benchRoom(b, n)
				author := room.Creator
				b.Run("check="+c.name, func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := c.check(db, room.Name, author.Login); err != nil {
								b.Error(err)
								return
							}
							m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
							if err := db.PostMessage(ctx, m); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		})
	}
}

// BenchmarkRoomEvents is a resuming subscriber's catch-up read: the 100
// events of the room's log after a cursor, joined with their messages.
func BenchmarkRoomEvents(b *testing.B) {
	db, room := benchRoom(b, 1)
	ctx := context.Background()
	author := room.Creator
	var cursor store.MessageID
	for i := range 1000 {
		id := store.NewMessageID()
		if i == 499 {
			cursor = id
		}
		if err := db.PostMessage(ctx, store.Message{Room: room.Name, ID: id, Author: author, Content: fmt.Sprint("message ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := db.RoomEvents(ctx, room.Name, cursor, 100)
		if err != nil || len(page) != 100 {
			b.Fatalf("RoomEvents = %d events, %v", len(page), err)
		}
	}
}

// BenchmarkInbox reads an inbox of 20 conversations (storetest.BenchmarkInbox).
func BenchmarkInbox(b *testing.B) {
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	storetest.BenchmarkInbox(b, db)
}

// BenchmarkPostToRoomOfSize is a post to a public room of 10, 200
// (store.InboxFanoutLimit) and 5,000 participants, from one poster: up to
// the limit it writes a position in each participant's inbox order, past
// it none, so its cost stays that of a post to a room at the limit
// (BENCHMARKS.md, "Posting to a large room").
func BenchmarkPostToRoomOfSize(b *testing.B) {
	for _, n := range []int{10, store.InboxFanoutLimit, 5000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			db, room := benchRoom(b, n)
			ctx := context.Background()
			author := room.Participants[0]
			b.ReportAllocs()
			for b.Loop() {
				m := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
				if err := db.PostMessage(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package embedded

import (
	"bytes"
	"slices"
	"sync"
	"unsafe"

	"github.com/killrchat/chatql/store"
)

// maxNewestPages bounds the rooms whose newest page the store keeps, and
// maxNewestBytes the pages' size (pageSize): a page of 51 messages is some
// 15 KB, but one of 101 messages of 4,000 characters each is 1.6 MB.
const (
	maxNewestPages = 512
	maxNewestBytes = 16 << 20
)

// newestPages keeps the newest page of the rooms read lately (Messages
// with no cursor, what everyone opening a room reads first), so that a
// room read more often than it is written is read from the store once per
// change. The store is the only writer of its pebble (the directory's
// lock), and every write of a room's messages goes through a batch, which
// reports the rooms it wrote once it committed (batch.touch, forget): the
// page kept is what a read would return.
//
// A read that a write overtook is not kept: a page's entry is made before
// its read, and every write of its room after that changes the entry's
// generation, which the read must find unchanged to keep its page. So a
// post acknowledged (committed, then forgotten) is on every page read
// after it. Generations are drawn from one counter, so an entry let go
// and made again never has the generation a read of the old one holds.
type newestPages struct {
	mu    sync.Mutex
	rooms map[string]*newestPage // by the room's partition prefix, roomMessages
	bytes int                    // the pages' sizes, summed
	gens  uint64                 // the last generation given
}

// newestPage is a room's newest page, or a read of it under way.
type newestPage struct {
	msgs  []store.Message // newest first; never changed once kept
	limit int             // the size read; 0 while none is kept
	size  int             // pageSize(msgs)
	gen   uint64          // changes with every write to the room, never reused
}

// page returns room's newest limit messages if kept, a slice of the kept
// page that every caller shares (Messages' callers change nothing; its
// capacity ends with it, so an append copies); else the generation to give
// keep once it read them.
func (n *newestPages) page(room key, limit int) (msgs []store.Message, kept bool, gen uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.rooms[string(room)]
	if p == nil {
		if n.rooms == nil {
			n.rooms = make(map[string]*newestPage)
		}
		if len(n.rooms) >= maxNewestPages {
			n.evictOne("")
		}
		n.gens++
		p = &newestPage{gen: n.gens}
		n.rooms[string(room)] = p
	}
	// A page read with a larger limit holds this one, and one that came
	// back short holds the whole room.
	if p.limit > 0 && (limit <= p.limit || len(p.msgs) < p.limit) {
		k := min(limit, len(p.msgs))
		return p.msgs[:k:k], true, 0
	}
	return nil, false, p.gen
}

// keep keeps msgs, the newest limit messages of room read after page
// returned gen, unless a write of the room came meanwhile. The reader that
// read them shares them from then on.
func (n *newestPages) keep(room key, limit int, gen uint64, msgs []store.Message) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.rooms[string(room)]
	if p == nil || p.gen != gen {
		return
	}
	size := pageSize(msgs)
	if size > maxNewestBytes/8 {
		if p.limit == 0 { // an entry that will hold no page takes no kept page's place
			delete(n.rooms, string(room))
		}
		return
	}
	n.bytes -= p.size
	p.msgs, p.limit, p.size = nil, 0, 0
	for n.bytes+size > maxNewestBytes {
		if !n.evictOne(string(room)) {
			break
		}
	}
	p.msgs, p.limit, p.size = msgs[:len(msgs):len(msgs)], limit, size
	n.bytes += size
}

// evictOne lets go of any one room but except, and its page; false if
// there is none. A read under way there keeps nothing.
func (n *newestPages) evictOne(except string) bool {
	for k, p := range n.rooms {
		if k != except {
			n.bytes -= p.size
			delete(n.rooms, k)
			return true
		}
	}
	return false
}

// pageSize is about the memory msgs hold: the messages, their contents,
// a share for their attachments and previews.
func pageSize(msgs []store.Message) int {
	size := len(msgs) * int(unsafe.Sizeof(store.Message{}))
	for i := range msgs {
		size += len(msgs[i].Content) + 256*len(msgs[i].Attachments)
		if msgs[i].Preview != nil {
			size += 512
		}
	}
	return size
}

// forget drops the pages of the rooms written, once their batch
// committed; all is for a write it could not tell the rooms of.
func (n *newestPages) forget(rooms []string, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	forget := func(p *newestPage) {
		n.bytes -= p.size
		n.gens++
		p.msgs, p.limit, p.size, p.gen = nil, 0, 0, n.gens
	}
	if all {
		for _, p := range n.rooms {
			forget(p)
		}
		return
	}
	for _, room := range rooms {
		if p := n.rooms[room]; p != nil {
			forget(p)
		}
	}
}

// messagesTable prefixes every key of chat_room_messages.
var messagesTable = tuple(tableRoomMessages)

// touch notes a write of key k, or of every key it prefixes (a deleted
// range): if it is of a room's messages, that room's newest page is
// forgotten once b commits.
func (b *batch) touch(k []byte) {
	switch {
	case bytes.HasPrefix(k, messagesTable):
		room, ok := roomPrefix(k)
		if !ok {
			b.touchesAllRooms = true
			return
		}
		if !slices.Contains(b.roomsTouched, room) {
			b.roomsTouched = append(b.roomsTouched, room)
		}
	case bytes.HasPrefix(messagesTable, k): // a range over the whole table, or more
		b.touchesAllRooms = true
	}
}

// roomPrefix returns the prefix of a key of chat_room_messages that is
// its room's (roomMessages), or false if k is shorter.
func roomPrefix(k []byte) (string, bool) {
	// The room is the element after the table's: a string, which ends at
	// the first 0x00 0x01 (an escaped 0x00 is 0x00 0xFF).
	for i := len(messagesTable); i+1 < len(k); i++ {
		if k[i] == 0x00 && k[i+1] == 0x01 {
			return string(k[:i+2]), true
		}
		if k[i] == 0x00 {
			i++ // the escape's second byte
		}
	}
	return "", false
}

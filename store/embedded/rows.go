package embedded

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/store"
)

// The values of the tables are JSON documents of the row types below: the
// columns not already in the key, under short names. They are separate from
// the domain types so that renaming a Go field never changes the files on
// disk. This file is the only place values are encoded or decoded.

// userRef is the Cassandra user-defined type `user`.
type userRef struct {
	Login     string `json:"l"`
	Firstname string `json:"f"`
	Lastname  string `json:"n"`
}

// userRow is a row of users.
type userRow struct {
	Login     string   `json:"login"`
	PassHash  []byte   `json:"pass_hash"`
	Firstname string   `json:"firstname"`
	Lastname  string   `json:"lastname"`
	Email     string   `json:"email,omitempty"`
	Bio       string   `json:"bio,omitempty"`
	ChatRooms []string `json:"chat_rooms,omitempty"` // sorted, no duplicates
	// Deleted marks the tombstone of a deleted account: the login stays
	// taken, everything else is erased.
	Deleted bool `json:"deleted,omitempty"`
	// Avatar is the user's picture; nil for none.
	Avatar *store.Picture `json:"avatar,omitempty"`
	// Bot marks a bot account, Owner the user who owns it.
	Bot   bool   `json:"bot,omitempty"`
	Owner string `json:"owner,omitempty"`
	// NoReadReceipts: the user sends and sees no read receipts.
	NoReadReceipts bool `json:"no_read_receipts,omitempty"`
	// EmailVerified, DigestsOff and DigestSentAt are the user's email
	// state (store.User).
	EmailVerified bool      `json:"email_verified,omitempty"`
	DigestsOff    bool      `json:"digests_off,omitempty"`
	DigestSentAt  time.Time `json:"digest_sent_at,omitzero"`
}

// roomRow is a row of chat_rooms. The creator's login is Creator.Login.
type roomRow struct {
	Name         string    `json:"room_name"`
	Kind         string    `json:"kind,omitempty"` // store.RoomKind: "" is public
	Creator      userRef   `json:"creator"`
	CreatedAt    time.Time `json:"creation_date"`
	Banner       string    `json:"banner,omitempty"`
	Participants []userRef `json:"participants"` // sorted by login, no duplicates
	// Former are the logins of a private group's members who left, whose
	// inbox entries deleting the group deletes too; sorted, no duplicates.
	Former []string `json:"former_members,omitempty"`
	// Moderators are sorted by login, no duplicates.
	Moderators []userRef `json:"moderators,omitempty"`
	// Icon is the room's picture; nil for none.
	Icon *store.Picture `json:"icon,omitempty"`
	// Title is a group's title; SlowMode the room's slow mode.
	Title    string        `json:"title,omitempty"`
	SlowMode time.Duration `json:"slow_mode,omitempty"`
}

// messageRow is a row of chat_room_messages; the room and the id are in the
// key.
type messageRow struct {
	Author   userRef         `json:"a"`
	Content  string          `json:"c"`
	System   bool            `json:"s,omitempty"`
	Hidden   bool            `json:"h,omitempty"`
	EditedAt time.Time       `json:"e,omitzero"`
	Deleted  bool            `json:"d,omitempty"`
	ReplyTo  store.MessageID `json:"t,omitzero"`
	// Files and Preview are store.Message's Attachments and Preview. The
	// fast parser (decodeMessage) does not know them: a row with either
	// takes encoding/json.
	Files   []fileRow   `json:"f,omitempty"`
	Preview *previewRow `json:"p,omitempty"`
}

// fileRow is an attachment of a message (store.Attachment).
type fileRow struct {
	ID          store.FileID `json:"i"`
	Name        string       `json:"n,omitempty"`
	ContentType string       `json:"t,omitempty"`
	Size        int64        `json:"s,omitempty"`
	Width       int          `json:"w,omitempty"`
	Height      int          `json:"h,omitempty"`
	Blurhash    string       `json:"b,omitempty"`
}

// previewRow is a message's link preview (store.LinkPreview).
type previewRow struct {
	URL         string `json:"u"`
	Title       string `json:"t,omitempty"`
	Description string `json:"d,omitempty"`
	SiteName    string `json:"s,omitempty"`
	ImageURL    string `json:"i,omitempty"`
}

func fileRows(as []store.Attachment) []fileRow {
	var rows []fileRow
	for _, a := range as {
		rows = append(rows, fileRow{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Width: a.Width, Height: a.Height, Blurhash: a.Blurhash})
	}
	return rows
}

func attachments(rows []fileRow) []store.Attachment {
	var as []store.Attachment
	for _, r := range rows {
		as = append(as, r.attachment())
	}
	return as
}

func (r fileRow) attachment() store.Attachment {
	return store.Attachment{ID: r.ID, Name: r.Name, ContentType: r.ContentType, Size: r.Size, Width: r.Width, Height: r.Height, Blurhash: r.Blurhash}
}

func newPreviewRow(p *store.LinkPreview) *previewRow {
	if p == nil {
		return nil
	}
	row := previewRow(*p)
	return &row
}

func (r *previewRow) preview() *store.LinkPreview {
	if r == nil {
		return nil
	}
	p := store.LinkPreview(*r)
	return &p
}

// Rows of messages_bucket have no columns besides the key: the value is
// empty.

// eventRow is a row of room_events or inbox_events; the log's owner and the
// event's id are in the key.
type eventRow struct {
	Kind string  `json:"k"` // store.EventKind
	User userRef `json:"u"`
	// Message is the id of the message the event is about, in the stream of
	// the room (or, in an inbox log, of Conversation); zero for none.
	Message      store.MessageID `json:"m,omitzero"`
	Conversation string          `json:"c,omitempty"` // inbox_events only
}

func newEventRow(ev store.Event) eventRow {
	row := eventRow{Kind: string(ev.Kind), User: refRow(ev.User)}
	if ev.Message != nil {
		row.Message = ev.Message.ID
	}
	return row
}

func encode(row any) ([]byte, error) {
	b, err := json.Marshal(row)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", row, err)
	}
	return b, nil
}

func decode[T any](value []byte) (T, error) {
	var row T
	if err := json.Unmarshal(value, &row); err != nil {
		return row, fmt.Errorf("decoding %T: %w", row, err)
	}
	return row, nil
}

func refRow(u store.UserRef) userRef { return userRef(u) }

func (u userRef) ref() store.UserRef { return store.UserRef(u) }

func accountRow(a store.Account) userRow {
	return userRow{
		Login:     a.Login,
		PassHash:  a.PassHash,
		Firstname: a.Firstname,
		Lastname:  a.Lastname,
		Email:     a.Email,
		Bio:       a.Bio,
		Bot:       a.Bot,
		Owner:     a.Owner,
	}
}

func (r userRow) account() store.Account {
	return store.Account{
		User: store.User{
			UserRef:   store.UserRef{Login: r.Login, Firstname: r.Firstname, Lastname: r.Lastname},
			Email:     r.Email,
			Bio:       r.Bio,
			ChatRooms: append([]string{}, r.ChatRooms...),
			Avatar:    r.Avatar,
			Bot:       r.Bot,
			Owner:     r.Owner,

			NoReadReceipts: r.NoReadReceipts,
			EmailVerified:  r.EmailVerified,
			DigestsOff:     r.DigestsOff,
			DigestSentAt:   r.DigestSentAt,
		},
		PassHash: r.PassHash,
	}
}

// addRoom adds name to the user's rooms, keeping them a sorted set.
func (r *userRow) addRoom(name string) {
	if i, found := slices.BinarySearch(r.ChatRooms, name); !found {
		r.ChatRooms = slices.Insert(r.ChatRooms, i, name)
	}
}

// removeRoom removes name from the user's rooms.
func (r *userRow) removeRoom(name string) {
	if i, found := slices.BinarySearch(r.ChatRooms, name); found {
		r.ChatRooms = slices.Delete(r.ChatRooms, i, i+1)
	}
}

func newRoomRow(r store.Room) roomRow {
	return roomRow{
		Name:         r.Name,
		Kind:         string(r.Kind),
		Creator:      refRow(r.Creator),
		CreatedAt:    r.CreatedAt.UTC(),
		Banner:       r.Banner,
		Participants: []userRef{refRow(r.Creator)},
	}
}

func (r roomRow) room() store.Room {
	ps := make([]store.UserRef, len(r.Participants))
	for i, p := range r.Participants {
		ps[i] = p.ref()
	}
	return store.Room{
		Name:         r.Name,
		Kind:         store.RoomKind(r.Kind),
		Creator:      r.Creator.ref(),
		CreatedAt:    r.CreatedAt,
		Banner:       r.Banner,
		Participants: ps,
		Moderators:   refs(r.Moderators),
		Icon:         r.Icon,
		Title:        r.Title,
		SlowMode:     r.SlowMode,
	}
}

func refs(rows []userRef) []store.UserRef {
	out := make([]store.UserRef, len(rows))
	for i, u := range rows {
		out[i] = u.ref()
	}
	return out
}

// memberRow is a row of room_members, the header row and the member rows
// alike: the room's kind and creator, which stay the same as long as the
// room exists, and in a member row whether the member moderates.
type memberRow struct {
	Kind      string  `json:"k,omitempty"` // store.RoomKind: "" is public
	Creator   userRef `json:"c"`
	Moderator bool    `json:"m,omitempty"`
	// SlowMode is the room's, kept in the header row only.
	SlowMode time.Duration `json:"s,omitempty"`
}

func (r roomRow) memberRow() memberRow { return memberRow{Kind: r.Kind, Creator: r.Creator} }

// headerRow is the header row of the room's partition of room_members.
func (r roomRow) headerRow() memberRow {
	h := r.memberRow()
	h.SlowMode = r.SlowMode
	return h
}

func (r memberRow) membership(room, login string, participant bool) store.RoomMembership {
	return store.RoomMembership{
		Room:        room,
		Kind:        store.RoomKind(r.Kind),
		Creator:     r.Creator.ref(),
		Login:       login,
		Participant: participant,
		Moderator:   r.Moderator,
		SlowMode:    r.SlowMode,
	}
}

func byLogin(p userRef, login string) int { return strings.Compare(p.Login, login) }

// addParticipant adds u to the participants, keeping them sorted by login.
// A participant who joins again keeps one entry, refreshed to u.
func (r *roomRow) addParticipant(u store.UserRef) {
	i, found := slices.BinarySearchFunc(r.Participants, u.Login, byLogin)
	if found {
		r.Participants[i] = refRow(u)
		return
	}
	r.Participants = slices.Insert(r.Participants, i, refRow(u))
}

// addFormer records login among the group's former members.
func (r *roomRow) addFormer(login string) {
	if i, found := slices.BinarySearch(r.Former, login); !found {
		r.Former = slices.Insert(r.Former, i, login)
	}
}

// removeParticipant removes login from the participants, and from the
// moderators, and reports whether it was a participant.
func (r *roomRow) removeParticipant(login string) bool {
	i, found := slices.BinarySearchFunc(r.Participants, login, byLogin)
	if found {
		r.Participants = slices.Delete(r.Participants, i, i+1)
	}
	r.setModerator(store.UserRef{Login: login}, false)
	return found
}

// setModerator makes u a moderator, or not, keeping them sorted by login.
func (r *roomRow) setModerator(u store.UserRef, on bool) {
	i, found := slices.BinarySearchFunc(r.Moderators, u.Login, byLogin)
	switch {
	case on && !found:
		r.Moderators = slices.Insert(r.Moderators, i, refRow(u))
	case !on && found:
		r.Moderators = slices.Delete(r.Moderators, i, i+1)
	}
}

func (r roomRow) moderates(login string) bool {
	_, found := slices.BinarySearchFunc(r.Moderators, login, byLogin)
	return found
}

func (r roomRow) hasParticipant(login string) bool {
	_, found := slices.BinarySearchFunc(r.Participants, login, byLogin)
	return found
}

func newMessageRow(m store.Message) messageRow {
	return messageRow{
		Author: refRow(m.Author), Content: m.Content, System: m.System, Hidden: m.Hidden, EditedAt: m.EditedAt, Deleted: m.Deleted, ReplyTo: m.ReplyTo,
		Files: fileRows(m.Attachments), Preview: newPreviewRow(m.Preview),
	}
}

func (r messageRow) message(room string, id store.MessageID) store.Message {
	return store.Message{
		Room: room, ID: id, Author: r.Author.ref(), Content: r.Content, System: r.System, Hidden: r.Hidden, EditedAt: r.EditedAt, Deleted: r.Deleted, ReplyTo: r.ReplyTo,
		Attachments: attachments(r.Files), Preview: r.Preview.preview(),
	}
}

// indexRow is a row of messages_by_id or messages_by_author: a message
// with its room, which those keys lack.
type indexRow struct {
	Room string `json:"r"`
	messageRow
}

func newIndexRow(m store.Message) indexRow {
	return indexRow{Room: m.Room, messageRow: newMessageRow(m)}
}

// Rows of author_buckets have no columns besides the key, and neither have
// the unread rows of conversations_by_user.

// conversationRow is the one row of a conversation in a user's inbox
// (conversations_by_user): the owner's login and the conversation's id are
// in the key. Unread counts are not stored: they are counted from the
// stream after Read (store.CountUnread).
type conversationRow struct {
	Kind    string          `json:"k"`           // store.ConversationKind
	Peer    *userRef        `json:"p,omitempty"` // direct conversations only
	Last    *lastRow        `json:"m,omitempty"` // none before the first message
	Read    store.MessageID `json:"r,omitzero"`  // the read mark; zero: nothing read
	Windows []windowRow     `json:"w,omitempty"` // groups only, oldest first
}

// lastRow is the newest message of a conversation, whose room is the
// conversation.
type lastRow struct {
	ID store.MessageID `json:"id"`
	messageRow
}

// windowRow is a membership interval; a zero To is still open.
type windowRow struct {
	From time.Time `json:"f"`
	To   time.Time `json:"t,omitzero"`
}

// setLast makes m the conversation's last message unless it has a newer
// one, and reports whether it did.
func (r *conversationRow) setLast(m store.Message) bool {
	if r.Last != nil && r.Last.ID.Compare(m.ID) >= 0 {
		return false
	}
	r.Last = &lastRow{ID: m.ID, messageRow: newMessageRow(m)}
	return true
}

// markRead moves the read mark to upTo unless it is further already, and
// reports whether it moved.
func (r *conversationRow) markRead(upTo store.MessageID) bool {
	if r.Read.Compare(upTo) >= 0 {
		return false
	}
	r.Read = upTo
	return true
}

// open appends a window from at, unless one is open already, and reports
// whether it did.
func (r *conversationRow) open(at time.Time) bool {
	if n := len(r.Windows); n > 0 && r.Windows[n-1].To.IsZero() {
		return false
	}
	r.Windows = append(r.Windows, windowRow{From: at.UTC()})
	return true
}

// close ends the open window at at, and reports whether there was one.
func (r *conversationRow) close(at time.Time) bool {
	n := len(r.Windows)
	if n == 0 || !r.Windows[n-1].To.IsZero() {
		return false
	}
	r.Windows[n-1].To = at.UTC()
	return true
}

// conversation returns the inbox entry with this id, without its unread
// count.
func (r conversationRow) conversation(id string) store.Conversation {
	c := store.Conversation{ID: id, Kind: store.ConversationKind(r.Kind), ReadUpTo: r.Read}
	if r.Peer != nil {
		c.Peer = r.Peer.ref()
	}
	if r.Last != nil {
		c.LastMessage = r.Last.message(id, r.Last.ID)
	}
	for _, w := range r.Windows {
		c.Windows = append(c.Windows, store.Window{From: w.From, To: w.To})
	}
	return c
}

// fileRecordRow is a row of files; the owner and the id are in the key.
type fileRecordRow struct {
	fileRow
	State   store.FileState `json:"st"`
	Message store.MessageID `json:"m,omitzero"`
	Room    string          `json:"r,omitempty"`
}

func newFileRecordRow(f store.File) fileRecordRow {
	return fileRecordRow{fileRow: fileRows([]store.Attachment{f.Attachment})[0], State: f.State, Message: f.Message, Room: f.Room}
}

func (r fileRecordRow) file(owner string) store.File {
	return store.File{Attachment: r.attachment(), Owner: owner, State: r.State, Message: r.Message, Room: r.Room}
}

// fileOwnerRow is a row of file_owners.
type fileOwnerRow struct {
	Bytes int64 `json:"b"`
}

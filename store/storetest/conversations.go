package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// ConversationStore is a backend with direct messages, inboxes, private
// groups and the message index.
type ConversationStore interface {
	store.Store
	store.Conversations
	store.MessageIndex
}

// convTest is a case of RunConversationTests.
type convTest = subtest[ConversationStore]

func conversationGroups() []group[ConversationStore] {
	return []group[ConversationStore]{
		{"EventLog", []convTest{
			{"Group", testGroupEvents},
			{"GroupDeleted", testGroupEventsDeleted},
			{"GroupAddOnce", testGroupEventsAddOnce},
			{"GroupConcurrentPosts", testGroupEventsConcurrentPosts},
			{"Direct", testInboxEventsDirect},
			{"InboxPaging", testInboxEventsPaging},
			{"InboxSkipsGone", testInboxEventsSkipGone},
		}},
		{"Direct", []convTest{
			{"ConversationID", testDirectConversationID},
			{"SendDirect", testSendDirect},
			{"History", testDirectHistory},
			{"LastMessageOutOfOrder", testDirectLastMessageOutOfOrder},
			{"Concurrent", testDirectConcurrent},
		}},
		{"Inbox", []convTest{
			{"Empty", testInboxEmpty},
			{"Order", testInboxOrder},
			{"ConversationErrNotFound", testConversationNotFound},
			{"UnreadCap", testUnreadCap},
			{"RoomReads", testRoomReads},
			{"Mentions", testMentions},
		}},
		{"MarkRead", []convTest{
			{"UpTo", testMarkReadUpTo},
			{"UnknownConversation", testMarkReadUnknown},
			{"OwnInboxOnly", testMarkReadOwnInboxOnly},
		}},
		{"Groups", []convTest{
			{"Kind", testRoomKind},
			{"Create", testGroupCreate},
			{"AddMember", testGroupAddMember},
			{"AddMemberErrors", testGroupAddMemberErrors},
			{"Post", testGroupPost},
			{"Leave", testGroupLeave},
			{"Delete", testGroupDelete},
			{"Windows", testGroupWindows},
			{"UnreadWindows", testGroupUnreadWindows},
			{"Moderation", testModerationGroup},
		}},
		{"MessageIndex", []convTest{
			{"Message", testIndexMessage},
			{"MessageErrNotFound", testIndexMessageNotFound},
			{"ByAuthor", testIndexByAuthor},
			{"Hide", testIndexHide},
			{"Edit", testEditMessage},
			{"Delete", testDeleteMessage},
			{"ChangeErrNotFound", testChangeNotFound},
			{"ChangeDirect", testChangeDirect},
			{"ChangeGroup", testChangeGroup},
			{"React", testReact},
			{"ReactCap", testReactCap},
			{"ReactGone", testReactGone},
			{"ReactionsPage", testReactionsPage},
			{"Threads", testThreads},
			{"ThreadsElsewhere", testThreadsElsewhere},
			{"HideFormerMember", testIndexHideFormerMember},
			{"DeleteRoom", testIndexDeleteRoom},
		}},
		{"Attachments", []convTest{
			{"EveryReadPath", testAttachmentsEveryReadPath},
			{"Preview", testSetPreview},
			{"PreviewDirect", testSetPreviewDirect},
			{"PreviewGroup", testSetPreviewGroup},
			{"PreviewRacingEdit", testSetPreviewRacingEdit},
		}},
	}
}

// RunConversationTests runs the conformance suite of store.Conversations and
// store.MessageIndex against s, as subtests of t named "Group/Case" (e.g.
// "Direct/Concurrent"), in the manner of RunTests: the subtests share s, make
// their own users and rooms, run concurrently, and are all done when it
// returns.
//
// Decisions the contract leaves open, fixed here:
//   - MarkRead of a conversation login has no entry for is harmless: it
//     returns nil and creates no entry (a range delete, no read first).
//   - MarkRead never removes the entry, nor its last message, even with an
//     upTo past every message.
//   - Inbox of a login with no conversations (or no account) is empty, not
//     an error.
//   - Inbox lists the entries without a message after all those with one.
//   - A direct conversation's Windows are empty; a group entry's Peer is zero.
//   - Creating a public room makes no inbox entry; creating a private group
//     makes the creator's, with one window opened at the room's CreatedAt.
//   - AddGroupMember checks the room's kind before the adder: a public room
//     is ErrInvalid whoever asks.
//   - HideMessage hides the message in every copy a reader sees: the
//     stream, by id, by author, and as the last message of the entries of
//     both users of a direct conversation and of a group's participants and
//     former members (who keep their entry).
//   - DeleteRoom deletes its messages from the index too: Message answers
//     ErrNotFound, MessagesByAuthor no longer lists them.
//   - Creating a room or a group logs nothing; an operation that fails, or
//     changes nothing (joining or adding a participant), logs nothing.
//   - MarkRead's UnreadChanged event names the owner by login (MarkRead is
//     given no names); the suite compares its login only.
//   - AddGroupMember's and LeaveGroup's system messages and events have ids
//     of the time given to the 100 ns of a timeuuid, and the system message
//     of an addition is in the window it opens (From <= its time) while
//     that of a leave is not in the window it closes (To <= its time).
//   - Times are compared to the millisecond, Cassandra's precision; the
//     windows of these tests fall on whole seconds.
func RunConversationTests(t *testing.T, s interface {
	store.Store
	store.Conversations
	store.MessageIndex
}) {
	t.Helper()
	runGroups(t, ConversationStore(s), conversationGroups())
}

// dmUsers makes two fresh users and returns them with their conversation id.
func dmUsers(t *testing.T, ctx context.Context, s store.Store) (alice, bob store.UserRef, id string) {
	t.Helper()
	alice = mustCreateUser(t, ctx, s, "alice").UserRef
	bob = mustCreateUser(t, ctx, s, "bob").UserRef
	return alice, bob, store.DirectConversationID(alice.Login, bob.Login)
}

// directMessage returns a message of from to to, as SendDirect takes it.
func directMessage(from, to store.UserRef, id store.MessageID, content string) store.Message {
	return store.Message{Room: store.DirectConversationID(from.Login, to.Login), ID: id, Author: from, Content: content}
}

// mustSendDirect sends a direct message of content from from to to.
func mustSendDirect(t *testing.T, ctx context.Context, s store.Conversations, from, to store.UserRef, id store.MessageID, content string) store.Message {
	t.Helper()
	m := directMessage(from, to, id, content)
	if err := s.SendDirect(ctx, m, to); err != nil {
		t.Fatalf("SendDirect(%s, to %q) = %v, want nil", fmtMessage(m), to.Login, err)
	}
	return m
}

// mustPostGroup posts a message of content by author to the group.
func mustPostGroup(t *testing.T, ctx context.Context, s store.Conversations, group string, id store.MessageID, author store.UserRef, content string, members []store.UserRef) store.Message {
	t.Helper()
	m := store.Message{Room: group, ID: id, Author: author, Content: content}
	if err := s.PostGroupMessage(ctx, m, members); err != nil {
		t.Fatalf("PostGroupMessage(%s) = %v, want nil", fmtMessage(m), err)
	}
	return m
}

// mustMarkRead marks login's messages of the conversation read up to upTo.
func mustMarkRead(t *testing.T, ctx context.Context, s store.Conversations, login, id string, upTo store.MessageID) {
	t.Helper()
	if _, err := s.MarkRead(ctx, login, id, upTo); err != nil {
		t.Fatalf("MarkRead(%q, %q, %v) = %v, want nil", login, id, upTo, err)
	}
}

// mustConversation reads an inbox entry that must exist.
func mustConversation(t *testing.T, ctx context.Context, s store.Conversations, login, id string) store.Conversation {
	t.Helper()
	c, err := s.Conversation(ctx, login, id)
	if err != nil {
		t.Fatalf("Conversation(%q, %q) = %v, want nil", login, id, err)
	}
	return c
}

// wantNoConversation checks that login has no entry for id, neither alone
// nor in its inbox.
func wantNoConversation(t *testing.T, ctx context.Context, s store.Conversations, login, id string) {
	t.Helper()
	c, err := s.Conversation(ctx, login, id)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Conversation(%q, %q) = %s, %v; want ErrNotFound", login, id, fmtConversation(c), err)
	}
	for _, c := range mustInbox(t, ctx, s, login) {
		if c.ID == id {
			t.Errorf("Inbox(%q) lists %s, want no entry %q", login, fmtConversation(c), id)
		}
	}
}

// mustInbox reads login's inbox.
func mustInbox(t *testing.T, ctx context.Context, s store.Conversations, login string) []store.Conversation {
	t.Helper()
	inbox, err := s.Inbox(ctx, login)
	if err != nil {
		t.Fatalf("Inbox(%q) = %v, want nil", login, err)
	}
	return inbox
}

// wantUnread checks login's unread count of the conversation.
func wantUnread(t *testing.T, ctx context.Context, s store.Conversations, login, id string, want int) {
	t.Helper()
	if c := mustConversation(t, ctx, s, login, id); c.Unread != want {
		t.Errorf("Conversation(%q, %q).Unread = %d, want %d", login, id, c.Unread, want)
	}
}

// checkConversation compares inbox entries, every field included; times to
// the millisecond.
func checkConversation(t *testing.T, what string, got, want store.Conversation) {
	t.Helper()
	if got.ID != want.ID || got.Kind != want.Kind || got.Peer != want.Peer || !sameMessage(got.LastMessage, want.LastMessage) ||
		got.Unread != want.Unread || !sameWindows(got.Windows, want.Windows) {
		t.Errorf("%s =\n  %s\nwant\n  %s", what, fmtConversation(got), fmtConversation(want))
	}
}

// checkInboxEntry finds the entry id in inbox and compares it.
func checkInboxEntry(t *testing.T, what string, inbox []store.Conversation, want store.Conversation) {
	t.Helper()
	for _, c := range inbox {
		if c.ID == want.ID {
			checkConversation(t, fmt.Sprintf("%s entry %q", what, want.ID), c, want)
			return
		}
	}
	t.Errorf("%s = %s, want an entry %q", what, fmtInbox(inbox), want.ID)
}

// checkWindows compares membership windows.
func checkWindows(t *testing.T, what string, got, want []store.Window) {
	t.Helper()
	if !sameWindows(got, want) {
		t.Errorf("%s = %s, want %s", what, fmtWindows(got), fmtWindows(want))
	}
}

func sameWindows(a, b []store.Window) bool {
	return slices.EqualFunc(a, b, func(x, y store.Window) bool {
		return sameInstant(x.From, y.From) && x.To.IsZero() == y.To.IsZero() && sameInstant(x.To, y.To)
	})
}

func fmtConversation(c store.Conversation) string {
	last := "none"
	if !c.LastMessage.ID.IsZero() || !sameMessage(c.LastMessage, (store.Message{})) {
		last = fmtMessage(c.LastMessage)
	}
	return fmt.Sprintf("{ID:%s Kind:%q Peer:%+v Unread:%d Windows:%s LastMessage:%s}", c.ID, c.Kind, c.Peer, c.Unread, fmtWindows(c.Windows), last)
}

func fmtInbox(inbox []store.Conversation) string {
	parts := make([]string, len(inbox))
	for i, c := range inbox {
		parts[i] = fmtConversation(c)
	}
	return "[" + strings.Join(parts, "\n  ") + "]"
}

func fmtWindows(ws []store.Window) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		to := "open"
		if !w.To.IsZero() {
			to = w.To.UTC().Format(time.RFC3339Nano)
		}
		parts[i] = w.From.UTC().Format(time.RFC3339Nano) + ".." + to
	}
	return "[" + strings.Join(parts, " ") + "]"
}

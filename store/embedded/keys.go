package embedded

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// Keys mirror the Cassandra tables as `table | partition key | clustering
// key`, each part an element of an order-preserving tuple encoding: the byte
// order of two keys is the order of their tuples, element by element. So a
// partition is one contiguous key range and its rows lie in clustering order.
//
// Strings are escaped (0x00 becomes 0x00 0xFF) and terminated by 0x00 0x01.
// The terminator sorts below every escaped byte, so a string orders before
// every longer string it prefixes, and no encoded string is a prefix of
// another: room "a" can never read the rows of room "a\x00b" or "ab".
// Integers are big-endian, fixed width, with the sign bit flipped so that
// negative numbers order first.

// The tables, named as in the Cassandra schema.
const (
	tableUsers            = "users"
	tableChatRooms        = "chat_rooms"
	tableRoomMessages     = "chat_room_messages"
	tableBuckets          = "messages_bucket"
	tableMessagesByID     = "messages_by_id"
	tableMessagesByAuthor = "messages_by_author"
	tableAuthorBuckets    = "author_buckets"
	tableConversations    = "conversations_by_user"
	tableSessions         = "sessions"
	tableRoomEvents       = "room_events"
	tableInboxEvents      = "inbox_events"
	tableInboxBuckets     = "inbox_buckets"
	tableClientMessages   = "client_messages"
	tableReactions        = "message_reactions"
	tableReplies          = "message_replies"
	tableRoomReads        = "room_reads"
	tableBlocks           = "user_blocks"
	tableMutes            = "user_mutes"
	// tableBlockCounts holds how many users each user blocks, kept with
	// the blocks so that Block need not count them: no Cassandra table.
	tableBlockCounts = "user_block_counts"
	// tableRoomBans holds the logins banned from each room, a partition
	// per room: Cassandra keeps them in chat_rooms.banned.
	tableRoomBans = "room_bans"
	// tableFiles holds the records of the files people send, a partition
	// per owner; tableFileOwners each owner's bytes; tableFileSweep the
	// sweep's list (see fileSweepKey).
	tableFiles      = "files"
	tableFileOwners = "file_owners"
	tableFileSweep  = "file_sweep"
	// tableNotices is the outbox, a partition per shard (see noticeKey);
	// tableNoticeCursors and tableNoticeLeases hold each shard's cursor
	// and lease.
	tableNotices       = "notices"
	tableNoticeCursors = "notice_cursors"
	tableNoticeLeases  = "notice_leases"
	// tablePushSends holds the push sends recorded before their pushes,
	// a partition per shard, by recipient then conversation.
	tablePushSends = "push_sends"
	// tablePushSubscriptions holds the users' push subscriptions, a
	// partition per user, and tablePushPreviews their choice of previews:
	// Cassandra keeps it as a static column of push_subscriptions.
	tablePushSubscriptions = "push_subscriptions"
	tablePushPreviews      = "push_previews"
	// tableWebhooks holds every room's webhooks with their state, one
	// partition, by id (Cassandra's webhooks, whose one partition is shard
	// 0); tableWebhookLeases each webhook's lease.
	tableWebhooks      = "webhooks"
	tableWebhookLeases = "webhook_leases"
	// tableBotKeys finds a bot by its API key's hash; tableBotsByOwner
	// lists each user's bots, a partition per owner.
	tableBotKeys     = "bot_keys"
	tableBotsByOwner = "bots_by_owner"
	// tableRoomPins holds each room's pinned messages, a partition per
	// room; tablePostTurns each member's last post in a room in slow mode;
	// tableInvites the invite links by their token's hash, listed per room
	// in tableRoomInvites.
	tableRoomPins    = "room_pins"
	tablePostTurns   = "room_post_turns"
	tableInvites     = "group_invites"
	tableRoomInvites = "group_invites_by_room"
	// tableEmailTokens holds the emailed links' tokens by hash;
	// tableEmailLogins the login each verified address finds;
	// tableDigestDue the due digests, a partition per outbox shard, by
	// login; tableDigestNotices the notices of each login's digest.
	tableEmailTokens   = "email_tokens"
	tableEmailLogins   = "email_logins"
	tableDigestDue     = "digest_due"
	tableDigestNotices = "digest_notices"
	// tableTwoFactor holds each user's two-factor settings.
	tableTwoFactor = "two_factor"
	// tablePasskeys holds each user's passkeys, a partition per user.
	tablePasskeys = "passkeys"
	// tableIdentities finds the account an OpenID Connect identity signs
	// in; tableUserIdentities lists each account's, a partition per login.
	tableIdentities     = "oidc_identities"
	tableUserIdentities = "oidc_identities_by_user"

	// tableRoomMembers is no Cassandra table but this store's index of
	// chat_rooms' participants (see membersPartition), and tableMeta holds
	// facts about the store itself, such as which indexes are built.
	tableRoomMembers = "room_members"
	tableMeta        = "store_meta"
)

// A key is an encoded tuple under construction. Each method appends one
// element and returns a longer key that never shares memory with k, so one
// prefix can be extended many ways.
type key []byte

// grow returns k with room for n more bytes, in a fresh array.
func (k key) grow(n int) key {
	return append(make(key, 0, len(k)+n), k...)
}

// tuple starts a key in table.
func tuple(table string) key {
	return key(nil).str(table)
}

// str appends a string element.
func (k key) str(s string) key {
	k = k.grow(len(s) + 2)
	for i := 0; i < len(s); i++ {
		if s[i] == 0x00 {
			k = append(k, 0x00, 0xFF)
		} else {
			k = append(k, s[i])
		}
	}
	return append(k, 0x00, 0x01)
}

// int appends a signed integer element.
func (k key) int(v int64) key {
	return binary.BigEndian.AppendUint64(k.grow(8), uint64(v)^(1<<63))
}

// desc appends the message id in descending order: the bytes of its sort
// key inverted, so newer messages come first, as the table's clustering
// order (message_id DESC) says.
func (k key) desc(id store.MessageID) key {
	sk := id.SortKey()
	k = k.grow(len(sk))
	for _, b := range sk {
		k = append(k, ^b)
	}
	return k
}

// descIDLen is the width of a desc element, and of an asc one.
const descIDLen = 16

// asc appends the message id in ascending order: its sort key.
func (k key) asc(id store.MessageID) key {
	sk := id.SortKey()
	return append(k.grow(len(sk)), sk[:]...)
}

// parseStr decodes the str element at the start of b and returns the rest.
func parseStr(b []byte) (s string, rest []byte, err error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0x00 {
			out = append(out, b[i])
			continue
		}
		if i+1 == len(b) {
			break
		}
		switch b[i+1] {
		case 0x01:
			return string(out), b[i+2:], nil
		case 0xFF:
			out = append(out, 0x00)
			i++
		default:
			return "", nil, fmt.Errorf("string key element has the bad escape 00 %02x", b[i+1])
		}
	}
	return "", nil, fmt.Errorf("string key element %x is not terminated", b)
}

// parseDesc decodes a desc element.
func parseDesc(b []byte) (store.MessageID, error) {
	if len(b) != descIDLen {
		return store.MessageID{}, fmt.Errorf("message key has a %d-byte id, want %d", len(b), descIDLen)
	}
	var sk [descIDLen]byte
	for i, x := range b {
		sk[i] = ^x
	}
	return store.MessageIDFromSortKey(sk[:])
}

// parseInt decodes an int element.
func parseInt(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("integer key element has %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), nil
}

// end returns the first key after every key that starts with k: the
// exclusive upper bound of the range k prefixes.
func (k key) end() []byte {
	end := bytes.Clone(k)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // k is all 0xFF: nothing follows, the range is unbounded
}

// next returns the first key after k itself, to make an inclusive lower
// bound exclusive.
func (k key) next() []byte {
	return append(k.grow(1), 0x00)
}

// The keys of the tables.

func userKey(login string) key { return tuple(tableUsers).str(login) }

func roomKey(name string) key { return tuple(tableChatRooms).str(name) }

// sessionPartition holds the sessions of login, by id.
func sessionPartition(login string) key { return tuple(tableSessions).str(login) }

func sessionKey(login, id string) key { return sessionPartition(login).str(id) }

// clientMessageKey is the row of client_messages naming author's message
// clientID.
func clientMessageKey(author, clientID string) key {
	return tuple(tableClientMessages).str(author).str(clientID)
}

// membersPartition is the room's partition of room_members: the room's
// kind and creator in a header row at the partition key itself, then one
// row per participant, by login, repeating the header. Every write of the
// room's row in chat_rooms writes it in the same batch (and DeleteRoom
// deletes the whole partition), so it always agrees with the room's
// participant set, and whether one user takes part is one point read of a
// small row instead of the decoding of the whole set. It is what Cassandra
// reads with a slice of the participants set (see the cassandra backend's
// Membership), kept as keys. The header row sorts before every member row,
// and no member row is taken for it: a login element always follows.
func membersPartition(room string) key { return tuple(tableRoomMembers).str(room) }

// memberKey is the row of room_members recording that login takes part in
// the room.
func memberKey(room, login string) key { return membersPartition(room).str(login) }

// bansPartition holds the logins banned from the room.
func bansPartition(room string) key { return tuple(tableRoomBans).str(room) }

// banKey is the row of room_bans recording that login is banned from room.
func banKey(room, login string) key { return bansPartition(room).str(login) }

// roomMembersBuilt is the row of store_meta that says room_members has
// been built for every room (see buildRoomMembers).
func roomMembersBuilt() key { return tuple(tableMeta).str(tableRoomMembers) }

// formerMembersBuilt is the row of store_meta that says every private
// group's former members are recorded in its row (see buildFormerMembers).
func formerMembersBuilt() key { return tuple(tableMeta).str("former_members") }

// messagePartition is the partition of chat_room_messages holding one day
// of a room.
func messagePartition(room string, b store.Bucket) key {
	return tuple(tableRoomMessages).str(room).int(int64(b))
}

// roomMessages prefixes every message partition of the room.
func roomMessages(room string) key { return tuple(tableRoomMessages).str(room) }

func messageKey(room string, id store.MessageID) key {
	return messagePartition(room, store.BucketOf(id.Time())).desc(id)
}

// bucketPartition is the partition of messages_bucket listing the room's
// non-empty buckets.
func bucketPartition(room string) key { return tuple(tableBuckets).str(room) }

func bucketKey(room string, b store.Bucket) key { return bucketPartition(room).int(int64(b)) }

// messageByIDKey is the row of messages_by_id holding a copy of the message.
func messageByIDKey(id store.MessageID) key { return tuple(tableMessagesByID).asc(id) }

// authorPartition is the partition of messages_by_author holding one day of
// an author's messages, newest first.
func authorPartition(login string, b store.Bucket) key {
	return tuple(tableMessagesByAuthor).str(login).int(int64(b))
}

func authorMessageKey(login string, id store.MessageID) key {
	return authorPartition(login, store.BucketOf(id.Time())).desc(id)
}

// authorBucketPartition lists the days in which login wrote, as
// messages_bucket lists a room's.
func authorBucketPartition(login string) key { return tuple(tableAuthorBuckets).str(login) }

func authorBucketKey(login string, b store.Bucket) key {
	return authorBucketPartition(login).int(int64(b))
}

// roomEventPartition is the partition of room_events holding one day of a
// room's log, oldest first.
func roomEventPartition(room string, b store.Bucket) key {
	return tuple(tableRoomEvents).str(room).int(int64(b))
}

// roomEvents prefixes every partition of the room's log.
func roomEvents(room string) key { return tuple(tableRoomEvents).str(room) }

// roomReadsPartition is the room's read marks, one row per login.
func roomReadsPartition(room string) key { return tuple(tableRoomReads).str(room) }

// blocksPartition holds whom login blocked, by login; mutesPartition the
// conversations login muted.
func blocksPartition(login string) key { return tuple(tableBlocks).str(login) }
func mutesPartition(login string) key  { return tuple(tableMutes).str(login) }

// blockCountKey is how many users login blocks (see DB.Block).
func blockCountKey(login string) key { return tuple(tableBlockCounts).str(login) }

// roomReplies is every thread row of a room, for its delete.
func roomReplies(room string) key { return tuple(tableReplies).str(room) }

// threadKey is the thread of root: one row per reply after this prefix,
// newest first, in the partition of the root's room and day.
func threadKey(room string, root store.MessageID) key {
	return roomReplies(room).int(int64(store.BucketOf(root.Time()))).desc(root)
}

// roomReactions is every reaction row of a room, for its delete.
func roomReactions(room string) key { return tuple(tableReactions).str(room) }

// messageReactions is the message's reaction rows: one per emoji and
// login after this prefix, in the message's room and day.
func messageReactions(room string, id store.MessageID) key {
	return roomReactions(room).int(int64(store.BucketOf(id.Time()))).desc(id)
}

func roomEventKey(room string, id store.MessageID) key {
	return roomEventPartition(room, store.BucketOf(id.Time())).asc(id)
}

// inboxEventPartition is the partition of inbox_events holding one day of
// login's inbox log, oldest first.
func inboxEventPartition(login string, b store.Bucket) key {
	return tuple(tableInboxEvents).str(login).int(int64(b))
}

func inboxEventKey(login string, id store.MessageID) key {
	return inboxEventPartition(login, store.BucketOf(id.Time())).asc(id)
}

// inboxBucketPartition lists the days of login's inbox log.
func inboxBucketPartition(login string) key { return tuple(tableInboxBuckets).str(login) }

func inboxBucketKey(login string, b store.Bucket) key {
	return inboxBucketPartition(login).int(int64(b))
}

// inboxPartition is the partition of conversations_by_user holding login's
// inbox: one row per conversation.
func inboxPartition(login string) key { return tuple(tableConversations).str(login) }

// conversationKey is the row of one conversation of login.
func conversationKey(login, id string) key { return inboxPartition(login).str(id) }

// unreadKey is a row of the versions before read marks, which recorded
// each message login had not read as a row after the conversation's (see
// buildReadMarks): its key is all, its value empty.
func unreadKey(login, id string, message store.MessageID) key {
	return conversationKey(login, id).asc(message)
}

// readMarksBuilt is the row of store_meta that says the unread rows of the
// versions before read marks are converted (see buildReadMarks).
func readMarksBuilt() key { return tuple(tableMeta).str("read_marks") }

// filesPartition holds owner's files, by id.
func filesPartition(owner string) key { return tuple(tableFiles).str(owner) }

func fileKey(owner string, id store.FileID) key { return filesPartition(owner).asc(id) }

// fileOwnerKey is the row of file_owners holding the sum of owner's files'
// sizes.
func fileOwnerKey(owner string) key { return tuple(tableFileOwners).str(owner) }

// doomedDay is the day of file_sweep that lists the doomed files, due
// whenever they were made: no file is made on day 0.
const doomedDay store.Bucket = 0

// fileSweepDay prefixes the sweep's rows of one day: the files made that
// day and not yet attached, or at doomedDay the doomed files, oldest
// first.
func fileSweepDay(day store.Bucket) key { return tuple(tableFileSweep).int(int64(day)) }

// fileSweepKey is the sweep's row of owner's file id: in the day of its
// id, or at doomedDay once it is doomed. The owner follows the id, so that
// the rows lie in the order of the files' times.
func fileSweepKey(day store.Bucket, id store.FileID, owner string) key {
	return fileSweepDay(day).asc(id).str(owner)
}

// noticesPartition is the outbox shard's notices, oldest first.
func noticesPartition(shard int) key { return tuple(tableNotices).int(int64(shard)) }

// noticesOf prefixes the notices of one id in the shard: one per recipient.
func noticesOf(shard int, id store.MessageID) key { return noticesPartition(shard).asc(id) }

// noticeKey is the row of one notice: by id, then recipient, the order
// PendingNotices reads them in.
func noticeKey(shard int, id store.MessageID, recipient string) key {
	return noticesOf(shard, id).str(recipient)
}

func noticeCursorKey(shard int) key { return tuple(tableNoticeCursors).int(int64(shard)) }

func noticeLeaseKey(shard int) key { return tuple(tableNoticeLeases).int(int64(shard)) }

// pushSendsOf prefixes the push sends of recipient in the shard.
func pushSendsOf(shard int, recipient string) key {
	return tuple(tablePushSends).int(int64(shard)).str(recipient)
}

// pushSendKey is the row of the push send to recipient of a conversation.
func pushSendKey(shard int, recipient, room string) key {
	return pushSendsOf(shard, recipient).str(room)
}

// pushPartition holds login's push subscriptions, by endpoint.
func pushPartition(login string) key { return tuple(tablePushSubscriptions).str(login) }

func pushKey(login, endpoint string) key { return pushPartition(login).str(endpoint) }

func pushPreviewsKey(login string) key { return tuple(tablePushPreviews).str(login) }

// webhooksPartition holds every webhook, by id.
func webhooksPartition() key { return tuple(tableWebhooks) }

func webhookKey(id string) key { return webhooksPartition().str(id) }

func webhookLeaseKey(id string) key { return tuple(tableWebhookLeases).str(id) }

// botKeyKey is the row of the bot whose API key hashes to hash.
func botKeyKey(hash []byte) key { return tuple(tableBotKeys).str(hex.EncodeToString(hash)) }

// botsPartition prefixes the bots of owner, one row per bot after it.
func botsPartition(owner string) key { return tuple(tableBotsByOwner).str(owner) }

// pinsPartition is a room's partition of room_pins; pinKey a pin's row.
func pinsPartition(room string) key { return tuple(tableRoomPins).str(room) }

func pinKey(room string, id store.MessageID) key { return pinsPartition(room).asc(id) }

// postTurnsPartition is a room's partition of room_post_turns; postTurnKey
// a member's row.
func postTurnsPartition(room string) key { return tuple(tablePostTurns).str(room) }

func postTurnKey(room, login string) key { return postTurnsPartition(room).str(login) }

// inviteKey is an invite's row; roomInvitesPartition a room's listing of
// its invites, by hash.
func inviteKey(hash string) key { return tuple(tableInvites).str(hash) }

func roomInvitesPartition(room string) key { return tuple(tableRoomInvites).str(room) }
func emailTokenKey(hash []byte) key        { return tuple(tableEmailTokens).str(hex.EncodeToString(hash)) }

func emailLoginKey(email string) key { return tuple(tableEmailLogins).str(store.NormalizeEmail(email)) }

// digestDuePartition holds the shard's due digests, by login.
func digestDuePartition(shard int) key { return tuple(tableDigestDue).int(int64(shard)) }

func digestDueKey(login string) key { return digestDuePartition(store.NoticeShard(login)).str(login) }

// digestNoticesPartition holds login's digest's notices, oldest first.
func digestNoticesPartition(login string) key { return tuple(tableDigestNotices).str(login) }

func digestNoticeKey(login string, id store.MessageID) key {
	return digestNoticesPartition(login).asc(id)
}

// twoFactorKey is the row of login's two-factor settings.
func twoFactorKey(login string) key { return tuple(tableTwoFactor).str(login) }

// passkeysPartition holds login's passkeys, by credential id.
func passkeysPartition(login string) key { return tuple(tablePasskeys).str(login) }

func passkeyKey(login string, id []byte) key { return passkeysPartition(login).str(string(id)) }

func identityKey(issuer, subject string) key { return tuple(tableIdentities).str(issuer).str(subject) }

// userIdentitiesPartition lists login's identities.
func userIdentitiesPartition(login string) key { return tuple(tableUserIdentities).str(login) }

// Package storetest is the conformance suite of store.Store: every backend
// runs RunTests against one instance of itself, so they all keep the same
// contract.
//
//	func TestConformance(t *testing.T) {
//		s := newStore(t)
//		defer s.Close()
//		storetest.RunTests(t, s)
//	}
//
// The suite shares one store across all its subtests, since some backends
// are slow to reset: every subtest makes its own users and rooms with unique
// names and tolerates whatever else the store holds. Subtests run in
// parallel; RunTests returns only once all of them are done, so the caller
// may close the store right after.
package storetest

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// subtestTimeout bounds every subtest's calls to the store.
const subtestTimeout = 30 * time.Second

// A subtest is one case of the suite, run against a store of type S.
type subtest[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// A group is a named set of cases, run in parallel.
type group[S any] struct {
	name  string
	tests []subtest[S]
}

// storeTest is a case of RunTests.
type storeTest = subtest[store.Store]

func groups() []group[store.Store] {
	return []group[store.Store]{
		{"CreateUser", []storeTest{
			{"OK", testCreateUserOK},
			{"ErrConflict", testCreateUserConflict},
			{"Concurrent", testCreateUserConcurrent},
		}},
		{"User", []storeTest{
			{"ErrNotFound", testUserNotFound},
			{"ChatRoomsSorted", testUserChatRoomsSorted},
		}},
		{"Account", []storeTest{
			{"ErrNotFound", testAccountNotFound},
		}},
		{"Profiles", []storeTest{
			{"Update", testUpdateProfile},
			{"UpdateConcurrent", testUpdateProfileConcurrent},
			{"Names", testNames},
			{"Avatar", testAvatar},
			{"RoomIcon", testRoomIcon},
			{"DeleteAccount", testDeleteAccount},
			{"DeleteRacingUpdate", testDeleteAccountRacingUpdate},
		}},
		{"Bots", []storeTest{
			{"Lifecycle", testBots},
			{"ErrConflict", testCreateBotConflict},
			{"Deleted", testDeleteBot},
		}},
		{"Email", []storeTest{
			{"Verify", testEmailVerify},
			{"Tokens", testEmailTokens},
			{"Digests", testDigests},
		}},
		{"TwoFactor", []storeTest{
			{"Lifecycle", testTwoFactor},
			{"Concurrent", testTwoFactorConcurrent},
		}},
		{"Passkeys", []storeTest{
			{"Lifecycle", testPasskeys},
			{"Cap", testPasskeysCap},
		}},
		{"Identities", []storeTest{
			{"Link", testIdentities},
		}},
		{"Blocks", []storeTest{
			{"OK", testBlocks},
			{"Cap", testBlocksCap},
			{"Mutes", testMutes},
		}},
		{"CreateRoom", []storeTest{
			{"OK", testCreateRoomOK},
			{"ErrConflict", testCreateRoomConflict},
		}},
		{"Room", []storeTest{
			{"ErrNotFound", testRoomNotFound},
		}},
		{"Rooms", []storeTest{
			{"Paging", testRoomsPaging},
		}},
		{"JoinRoom", []storeTest{
			{"OK", testJoinRoomOK},
			{"Twice", testJoinRoomTwice},
			{"ErrNotFound", testJoinRoomNotFound},
		}},
		{"LeaveRoom", []storeTest{
			{"OK", testLeaveRoomOK},
			{"NotParticipant", testLeaveRoomNotParticipant},
			{"ErrNotFound", testLeaveRoomNotFound},
		}},
		{"DeleteRoom", []storeTest{
			{"OK", testDeleteRoomOK},
			{"ErrForbidden", testDeleteRoomForbidden},
			{"ErrNotFound", testDeleteRoomNotFound},
			{"JoinRacingDelete", testJoinRacingDelete},
		}},
		{"Moderation", []storeTest{
			{"Roles", testModerationRoles},
			{"Ban", testModerationBan},
			{"RacingJoin", testModerationRacingJoin},
			{"RacingDelete", testModerationRacingDelete},
		}},
		{"Membership", []storeTest{
			{"Participants", testMembershipParticipants},
			{"Leave", testMembershipLeave},
			{"Delete", testMembershipDelete},
			{"ErrNotFound", testMembershipNotFound},
			{"PrivateGroup", testMembershipGroup},
			{"LoginPrefixes", testMembershipLoginPrefixes},
			{"ConcurrentJoinLeave", testMembershipConcurrent},
			{"RacingDelete", testMembershipRacingDelete},
		}},
		{"Messages", []storeTest{
			{"NewestFirst", testMessagesNewestFirst},
			{"Empty", testMessagesEmpty},
			{"Paging", testMessagesPaging},
			{"After", testMessagesAfter},
			{"System", testMessagesSystem},
			{"ReadYourWrites", testMessagesReadYourWrites},
			{"ConcurrentPosts", testMessagesConcurrentPosts},
			{"RoomIsolation", testMessagesRoomIsolation},
		}},
		{"ClaimClientMessage", []storeTest{
			{"OK", testClaimClientMessage},
			{"Concurrent", testClaimClientMessageConcurrent},
		}},
		{"RoomEvents", []storeTest{
			{"Posts", testRoomEventsPosts},
			{"Paging", testRoomEventsPaging},
			{"Newest", testRoomEventsNewest},
			{"ZeroCursor", testRoomEventsZero},
			{"AcrossDays", testRoomEventsAcrossDays},
			{"Join", testRoomEventsJoin},
			{"Leave", testRoomEventsLeave},
			{"Hide", testRoomEventsHide},
			{"Deleted", testRoomEventsDeleted},
			{"ConcurrentPosts", testRoomEventsConcurrentPosts},
			{"JoinLeaveOnce", testRoomEventsJoinLeaveOnce},
		}},
		{"Files", []storeTest{
			{"Lifecycle", testFilesLifecycle},
			{"Quota", testFilesQuota},
			{"QuotaConcurrent", testFilesQuotaConcurrent},
			{"OtherOwner", testFilesOtherOwner},
			{"ClaimAllOrNone", testFilesClaimAllOrNone},
			{"ClaimPicture", testFilesClaimPicture},
			{"Release", testFilesRelease},
			{"ClaimRacing", testFilesClaimRacing},
			{"DueFiles", testDueFiles},
			{"DoomOwnerFiles", testDoomOwnerFiles},
			{"BytesConcurrent", testFilesBytesConcurrent},
			{"AttachRacingDoom", testFilesAttachRacingDoom},
		}},
		{"Outbox", []storeTest{
			{"Writes", testOutboxWrites},
			{"RacingAdds", testOutboxRacingAdds},
			{"Paging", testOutboxPaging},
			{"Backlog", testOutboxBacklog},
			{"Cursor", testOutboxCursor},
			{"PushSends", testPushSends},
			{"LeaseHolders", testLeaseHolders},
			{"LeaseRacing", testLeaseRacing},
		}},
		{"PushSubscriptions", []storeTest{
			{"Lifecycle", testPushSubscriptions},
		}},
		{"Webhooks", []storeTest{
			{"Lifecycle", testWebhooksLifecycle},
			{"Lease", testWebhookLease},
		}},
		{"RoomSettings", roomSettingsTests()},
		{"InboxOrder", inboxOrderTests()},
	}
}

// RunTests runs the whole conformance suite against s, as subtests of t
// named "Group/Case" (e.g. "CreateUser/ErrConflict"). The subtests share s
// and run concurrently; RunTests returns when all of them have finished.
func RunTests(t *testing.T, s store.Store) {
	t.Helper()
	runGroups(t, s, groups())
}

// runGroups runs the groups against s and returns when all are done.
func runGroups[S any](t *testing.T, s S, gs []group[S]) {
	t.Helper()
	// Groups run concurrently, each from its own goroutine (t.Run allows it
	// as long as all calls return before the test does), and the cases of a
	// group run in parallel. Waiting here keeps the store open until the end.
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Go(func() {
			t.Run(g.name, func(t *testing.T) {
				for _, c := range g.tests {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						c.run(t, s)
					})
				}
			})
		})
	}
	wg.Wait()
}

// newContext returns the context bounding one subtest's calls.
func newContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), subtestTimeout)
	t.Cleanup(cancel)
	return ctx
}

const suffixLetters = "abcdefghijklmnopqrstuvwxyz"

// randomSuffix returns 8 random lowercase letters, making names unique
// across subtests and across runs against a persistent store.
func randomSuffix() string {
	b := make([]byte, 8)
	for i := range b {
		b[i] = suffixLetters[rand.IntN(len(suffixLetters))]
	}
	return string(b)
}

// newLogin returns a fresh valid login starting with prefix.
func newLogin(t *testing.T, prefix string) string {
	t.Helper()
	login := prefix + "." + randomSuffix()
	if err := store.ValidateLogin(login); err != nil {
		t.Fatalf("storetest: bad generated login: %v", err)
	}
	return login
}

// newRoomName returns a fresh valid room name starting with prefix.
func newRoomName(t *testing.T, prefix string) string {
	t.Helper()
	name := prefix + "-" + randomSuffix()
	if err := store.ValidateRoomName(name); err != nil {
		t.Fatalf("storetest: bad generated room name: %v", err)
	}
	return name
}

// The chat app: the inbox with unread counts, rooms, and one open
// conversation (a room, a private group or a direct conversation) with its
// history paged on scroll, its pinned messages and a group's invite links;
// every change live on one sync. Every call to the server is
// in api.js; this file is the page.
import * as api from "./api.js";
import "./search.js"; // the search box, which keeps to itself
import { askForCode } from "./settings.js"; // the account's settings, single sign-on and two-factor codes

const $ = (id) => document.getElementById(id);
export const pageSize = 30; // messages a page of the history reads (exported for the browser tests)
export const inboxPage = 30; // conversations the inbox shows first, and each "More conversations" adds
const inboxMaxPage = 50; // the most conversations the server gives a page
const quickReactions = ["👍", "🎉", "❤️"];

// The fields the app shows of a file a message carries.
const attachmentFields = "id name contentType size width height blurhash url thumbnails { width height url }";
// A message carries at most this many files.
const maxFiles = 10;

// The fields the app shows of an avatar or a room's icon: its smallest
// thumbnail and its blurhash, asked for only where one is drawn (an Image's
// other fields would weigh on every message of a page).
const pictureFields = "thumbnails { url } blurhash";

// The app's queries; exported for the browser tests, which check that a
// page of messages stays within the server's query cost limit.
// The fields the app shows of a message, asked for everywhere a message is read.
const messageFields = `id room content system postedAt hidden editedAt deleted replyToId replyCount mentions
  author { login firstname lastname avatar { ${pictureFields} } } reactions { emoji count reactedByMe }
  attachments { ${attachmentFields} } preview { url title description siteName imageUrl }`;

// The fields a sync change carries of its message: enough for the unread
// counts and to tell which conversation it is in.
const syncMessageFields = "id conversationId system deleted mentions author { login }";

// The fields the app shows of a pinned message in the pinned list.
const pinFields = "pinnedAt pinnedBy { login } message { id content deleted hidden attachments { name } author { login firstname lastname } }";

// The fields the app shows of a group's invite link.
const inviteFields = "id createdBy { login } createdAt expiresAt maxUses uses";

// The fields the app shows of an inbox entry.
const conversationFields = `id kind unread mentions muted readUpTo peerOnline peer { login firstname lastname avatar { ${pictureFields} } }
  lastMessage { id content deleted author { login } }`;

export const queries = {
  // The inbox a page at a time, newest activity first (inboxPage, then up
  // to 50 a page when the app reads again what it shows).
  conversations: `query Conversations($first: Int, $after: String) { conversations(first: $first, after: $after) {
    edges { node { ${conversationFields} } } pageInfo { hasNextPage endCursor } } }`,
  rooms: `query Rooms($after: String) { rooms(first: 20, after: $after) {
    edges { node { name banner kind icon { ${pictureFields} } } } pageInfo { hasNextPage endCursor } } }`,
  room: `query Room($name: String!) { room(name: $name) { name banner kind icon { ${pictureFields} } creator { login } moderators { login }
    participants(first: 100) { login } online(first: 100) { login } } }`,
  messages: `query Messages($room: String!, $first: Int, $after: String) { messages(room: $room, first: $first, after: $after) {
    edges { cursor node { ${messageFields} } } pageInfo { hasNextPage endCursor } } }`,
  thread: `query Thread($id: ID!, $first: Int, $after: String) { thread(messageId: $id, first: $first, after: $after) {
    edges { cursor node { ${messageFields} } } pageInfo { hasNextPage endCursor } } }`,
  directMessages: `query Direct($with: String!, $first: Int, $after: String) { directMessages(with: $with, first: $first, after: $after) {
    edges { cursor node { ${messageFields} } } pageInfo { hasNextPage endCursor } } }`,
  presence: `query Presence($logins: [String!]!) { presence(logins: $logins) { login online } }`,
  // The sync: one subscription for every conversation, with a light
  // selection of each message (a page holds up to 50 changes, within the
  // cost limit); the open conversation reads its messages whole (message).
  sync: `subscription Sync($after: String) { sync(after: $after) { cursor caughtUp changes {
    roomEvent { kind room user { login } message { ${syncMessageFields} } }
    inboxEvent { kind conversationId user { login } message { ${syncMessageFields} } } } } }`,
  // What no log keeps (typing, presence), live only: of the open room, and of the direct conversations.
  roomLive: `subscription RoomLive($room: String!) { roomEvents(room: $room, presence: true) { kind online user { login } } }`,
  inboxLive: `subscription InboxLive { inboxEvents(presence: true) { kind conversationId online user { login } } }`,
  post: `mutation Post($room: String!, $content: String!, $id: String, $replyTo: ID, $attachments: [ID!]) {
    postMessage(room: $room, content: $content, clientMessageId: $id, replyTo: $replyTo, attachments: $attachments) { ${messageFields} } }`,
  sendDirect: `mutation Send($to: String!, $content: String!, $id: String, $replyTo: ID, $attachments: [ID!]) {
    sendDirectMessage(to: $to, content: $content, clientMessageId: $id, replyTo: $replyTo, attachments: $attachments) { ${messageFields} } }`,
  createUpload: `mutation Upload($name: String!, $type: String!, $size: Int!) {
    createUpload(name: $name, contentType: $type, size: $size) { id method url headers { name value } expiresAt } }`,
  completeUpload: `mutation Complete($id: ID!) { completeUpload(id: $id) { ${attachmentFields} } }`,
  message: `query Message($id: ID!) { message(id: $id) { ${messageFields} } }`,
  fileQuota: `query Quota { fileQuota { usedBytes limitBytes maxFileBytes } }`,
  edit: `mutation Edit($id: ID!, $content: String!) { editMessage(id: $id, content: $content) { ${messageFields} } }`,
  delete: `mutation Delete($id: ID!) { deleteMessage(id: $id) { ${messageFields} } }`,
  addReaction: `mutation React($id: ID!, $emoji: String!) { addReaction(messageId: $id, emoji: $emoji) { ${messageFields} } }`,
  removeReaction: `mutation Unreact($id: ID!, $emoji: String!) { removeReaction(messageId: $id, emoji: $emoji) { ${messageFields} } }`,
  markRead: `mutation Read($c: ID!, $upTo: ID!) { markRead(conversation: $c, upTo: $upTo) { ${conversationFields} } }`,
  typing: `mutation Typing($c: ID!, $active: Boolean) { typing(conversation: $c, active: $active) }`,
  createRoom: `mutation Create($input: CreateRoomInput!) { createRoom(input: $input) { name } }`,
  joinRoom: `mutation Join($room: String!) { joinRoom(room: $room) { name } }`,
  addMember: `mutation Add($g: String!, $l: String!) { addGroupMember(group: $g, login: $l) { name } }`,
  leaveRoom: `mutation Leave($room: String!) { leaveRoom(room: $room) { name } }`,
  me: `query Me { me { login firstname lastname bio avatar { ${pictureFields} } } blockedUsers { login } }`,
  updateProfile: `mutation Profile($input: ProfileInput!) { updateProfile(input: $input) { login firstname lastname bio avatar { ${pictureFields} } } }`,
  setAvatar: `mutation Avatar($file: ID) { setAvatar(file: $file) { login firstname lastname bio avatar { ${pictureFields} } } }`,
  block: `mutation Block($l: String!) { blockUser(login: $l) { login } }`,
  unblock: `mutation Unblock($l: String!) { unblockUser(login: $l) { login } }`,
  mute: `mutation Mute($c: ID!, $m: Boolean) { muteConversation(conversation: $c, muted: $m) }`,
  hide: `mutation Hide($id: ID!) { hideMessage(id: $id) { ${messageFields} } }`,
  removeParticipant: `mutation Remove($r: String!, $l: String!) { removeParticipant(room: $r, login: $l) { name } }`,
  ban: `mutation Ban($r: String!, $l: String!) { banUser(room: $r, login: $l) { name } }`,
  pins: `query Pins($name: String!) { room(name: $name) { pinnedMessages { ${pinFields} } } }`,
  pin: `mutation Pin($id: ID!) { pinMessage(id: $id) { id } }`,
  unpin: `mutation Unpin($id: ID!) { unpinMessage(id: $id) { id } }`,
  invites: `query Invites($name: String!) { room(name: $name) { invites { ${inviteFields} } } }`,
  createInvite: `mutation CreateInvite($r: String!, $n: Int, $s: Int) { createInvite(room: $r, maxUses: $n, expiresInSeconds: $s) { token invite { ${inviteFields} } } }`,
  revokeInvite: `mutation RevokeInvite($r: String!, $id: ID!) { revokeInvite(room: $r, id: $id) }`,
  joinByInvite: `mutation JoinByInvite($t: String!) { joinByInvite(token: $t) { name } }`,
  push: `query Push { vapidPublicKey pushPreviews pushSubscriptions { endpoint } }`,
  registerPush: `mutation RegisterPush($e: String!, $p: String!, $a: String!, $d: String) {
    registerPushSubscription(endpoint: $e, p256dh: $p, auth: $a, device: $d) { endpoint } }`,
  unregisterPush: `mutation UnregisterPush($e: String!) { unregisterPushSubscription(endpoint: $e) }`,
  setPushPreviews: `mutation Previews($p: Boolean!) { setPushPreviews(previews: $p) }`,
};

// ---- Signing in and out ----

function showSignedIn(user) {
  $("auth").hidden = !!user;
  $("chat").hidden = !user;
  if (user) {
    renderMe(user);
    startChat();
  } else {
    stopChat();
    $("auth-note").hidden = !location.hash.startsWith("#join/");
    $("login-login").focus();
  }
}

function authForm(form, action) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    $("auth-error").textContent = "";
    const data = Object.fromEntries(new FormData(form));
    try {
      await action(data);
      form.reset();
    } catch (err) {
      if (err.code === "TWO_FACTOR_REQUIRED") askForCode(err);
      else $("auth-error").textContent = err.message;
    }
  });
}
authForm($("login-form"), (d) => api.login(d.login, d.password));
authForm($("signup-form"), (d) => api.signup(d));
$("logout").addEventListener("click", () => api.logout());
api.onSession((user) => {
  if (!!user !== started) showSignedIn(user);
});

api.connectionState((state) => {
  $("connection").textContent = state === "live" ? "online" : state;
  $("connection").dataset.state = state;
  if (state !== "live") syncLive = false; // the sync replays what it missed first
  if (state !== "live" || !started) return;
  // Presence is not replayed: after a (re)connect, read it again. So is
  // the newest page: the subscriptions replay from their cursors, but one
  // started before any event (an empty room, the inbox) has none.
  loadInboxSoon();
  if (open) {
    refreshPresence();
    refreshNewest();
  }
});

// ---- The inbox and the rooms ----

let started = false;
let inboxTimer = 0;
let conversations = [];

async function startChat() {
  if (started) return;
  started = true;
  loadMe();
  loadRooms();
  openFromHash();
  // The sync first, from the cursor this tab kept (a reload resumes it);
  // the inbox is read once the sync is on (see onSyncPage), so that what
  // happens between the read and the sync's start is not lost.
  startSync(storedCursor());
  inboxLive = api.subscribe(queries.inboxLive, () => ({}), "inboxEvents", onInboxLive, null);
  await loadInbox();
}

function stopChat() {
  started = false;
  syncSub?.cancel();
  syncSub = null;
  clearTimeout(syncRetry);
  inboxLive?.cancel();
  inboxLive = null;
  storeCursor(null);
  delete $("chat").dataset.sync;
  closeConversation();
  $("inbox").replaceChildren();
  conversations = [];
  inboxWanted = inboxPage;
  inboxCursor = null;
  inboxHasMore = false;
  $("inbox-more").hidden = true;
  $("rooms").replaceChildren();
}

// ---- The sync ----

// One subscription, `sync`, brings every change of every conversation the
// user takes part in: the inbox's (direct messages, unread counts, groups
// joined) and every room's and group's (posts, edits, deletions,
// reactions, pins, joins and leaves), each once, in pages with a cursor.
// The tab keeps the last page's cursor (sessionStorage): a reconnect and a
// reload resume from it, and the server replays what was missed, nothing
// twice. A cursor the server refuses (one it did not give) starts a new
// sync from now, with the inbox and the open conversation read again.
// Typing and presence are in no log: the open room's `roomEvents` and the
// inbox's `inboxEvents`, live only, bring them.
const syncStored = "chatql.sync"; // sessionStorage: { login, cursor }
let syncSub = null;
let syncCursor = null; // the cursor of the last page applied
let syncRetry = 0;
let inboxLive = null;

function storedCursor() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(syncStored) || "null");
    return kept?.login === api.currentUser()?.login ? (kept.cursor ?? null) : null;
  } catch {
    return null;
  }
}

function storeCursor(cursor) {
  if (cursor) sessionStorage.setItem(syncStored, JSON.stringify({ login: api.currentUser()?.login, cursor }));
  else sessionStorage.removeItem(syncStored);
}

// startSync subscribes from cursor (null: from now). #chat's data-sync is
// "live" once a page said the sync caught up (the browser tests wait for it).
function startSync(cursor) {
  syncLive = false;
  syncCursor = cursor;
  syncFresh = cursor === null;
  $("chat").dataset.sync = "starting";
  // The server ends a sync only when it must (its user's session ended, or it shuts down): again from the cursor.
  const ended = () => onSyncRefused(new Error("the server ended the sync"));
  syncSub = api.subscribe(queries.sync, (after) => ({ after }), "sync", onSyncPage, onSyncRefused, cursor, ended);
}

// onSyncRefused: the server refused or ended the sync with an error. A
// cursor it does not take (BAD_USER_INPUT: not one it gave) starts a new
// sync from now, and what a replay would have brought is read again; a
// stream that failed (it fell behind, the server had trouble) starts
// again from the last cursor, in a while.
let syncBackoff = 0;
function onSyncRefused(err) {
  if (!started) return;
  syncSub = null;
  if (err.code === "BAD_USER_INPUT" && syncCursor !== null) {
    storeCursor(null);
    startSync(null);
    return;
  }
  syncBackoff = Math.min(30_000, syncBackoff * 2 || 1000);
  if (syncBackoff >= 8000) showSideError(new Error(`Live updates stopped (${err.message}). Trying again…`));
  syncRetry = setTimeout(() => started && !syncSub && startSync(syncCursor), syncBackoff);
}

let syncFresh = false; // the sync started from now, and no page came yet
// The sync is live: its replay (after a start or a reconnect) is over. A
// replayed post is counted by the inbox's read, not once more at once.
let syncLive = false;

function onSyncPage(page) {
  if (!started) return;
  for (const change of page.changes) {
    if (change.roomEvent) onRoomChange(change.roomEvent);
    else if (change.inboxEvent) onInboxChange(change.inboxEvent);
  }
  syncCursor = page.cursor;
  storeCursor(page.cursor);
  if (syncBackoff >= 8000) showSideError(null);
  syncBackoff = 0;
  if (page.caughtUp) {
    syncLive = true;
    $("chat").dataset.sync = "live";
  }
  if (syncFresh) {
    // A sync from now (its first page comes at once): what came before it is read again.
    syncFresh = false;
    loadInbox();
    if (open?.ready) {
      refreshNewest();
      if (open.kind === "room") loadPins();
    }
  }
}

// The kinds of room events that change an unread count.
const changesUnread = new Set(["MESSAGE_POSTED", "MESSAGE_DELETED", "MESSAGE_HIDDEN"]);
// The kinds of room events that change who takes part, or what the room is.
const changesRoom = new Set(["PARTICIPANT_JOINED", "PARTICIPANT_LEFT", "PARTICIPANT_REMOVED", "PARTICIPANT_BANNED", "MODERATOR_APPOINTED", "MODERATOR_DISMISSED", "ROOM_SETTINGS_CHANGED"]);

function onRoomChange(e) {
  const me = api.currentUser().login;
  const here = open?.kind === "room" && open.name === e.room;
  if (changesUnread.has(e.kind) && e.user.login !== me) {
    if (e.kind === "MESSAGE_POSTED" && !here && !e.message?.system) countUnread(e.room, e.message);
    loadInboxSoon(500);
  }
  if (e.kind === "ROOM_DELETED" || (changesRoom.has(e.kind) && e.user.login === me)) loadInboxSoon();
  if (!here) return;
  switch (e.kind) {
    case "ROOM_DELETED":
      $("conversation-info").textContent = "This room was deleted.";
      $("composer").hidden = true;
      loadRooms();
      return;
    case "MESSAGE_PINNED":
    case "MESSAGE_UNPINNED":
      loadPins();
      if (e.user.login !== me) $("announce").textContent = `${e.user.login} ${e.kind === "MESSAGE_PINNED" ? "pinned" : "unpinned"} a message.`;
      return;
    case "PARTICIPANT_LEFT":
    case "PARTICIPANT_REMOVED":
    case "PARTICIPANT_BANNED":
      if (e.message) showFetched(e.message.id, true);
      if (e.user.login === me) {
        $("conversation-info").textContent = e.kind === "PARTICIPANT_LEFT" ? "You left this room." : `You were ${e.kind === "PARTICIPANT_BANNED" ? "banned" : "removed"} from this room.`;
        $("composer").hidden = true;
        $("leave").hidden = true;
        roomLive?.cancel();
        return;
      }
      refreshPresence();
      return;
  }
  if (changesRoom.has(e.kind)) refreshPresence();
  if (e.kind === "MESSAGE_POSTED") {
    setTyping(e.user.login, false);
    postedAt.set(e.user.login, Date.now());
  }
  // A post, or the system message that records a join, a leave or a moderation: new to the history.
  if (e.message) showFetched(e.message.id, e.kind === "MESSAGE_POSTED" || e.message.system);
}

function onInboxChange(e) {
  const here = open?.kind === "dm" && e.conversationId === open.id;
  const me = api.currentUser().login;
  if (e.kind === "DIRECT_MESSAGE" && !here && e.user.login !== me) countUnread(e.conversationId, e.message);
  loadInboxSoon(e.kind === "DIRECT_MESSAGE" ? 500 : 200);
  if (e.kind === "ADDED_TO_GROUP") loadRooms();
  if (!here || !e.message) return;
  if (e.kind === "DIRECT_MESSAGE") setTyping(e.user.login, false);
  showFetched(e.message.id, e.kind === "DIRECT_MESSAGE");
}

// countUnread counts a new message in the inbox at once; the inbox read
// that follows (loadInboxSoon) has the last word.
function countUnread(id, message) {
  const entry = conversations.find((c) => c.id === id);
  if (!entry || !message || !syncLive) return;
  entry.unread = (entry.unread ?? 0) + 1;
  if (message.mentions?.includes(api.currentUser().login)) entry.mentions = (entry.mentions ?? 0) + 1;
  renderInbox();
}

// The ephemeral events of direct conversations: typing, and the other
// users' presence (the inbox's dots).
function onInboxLive(e) {
  const here = open?.kind === "dm" && e.conversationId === open.id;
  switch (e.kind) {
    case "TYPING_STARTED":
    case "TYPING_STOPPED":
      if (here) setTyping(e.user.login, e.kind === "TYPING_STARTED");
      return;
    case "PRESENCE_CHANGED":
      for (const c of conversations) if (c.peer?.login === e.user.login) c.peerOnline = e.online;
      renderInbox();
      if (here) setOnline(e.user.login, e.online);
  }
}

// The open room's ephemeral events: typing and presence.
let roomLive = null;
function onRoomLive(e) {
  switch (e.kind) {
    case "TYPING_STARTED":
    case "TYPING_STOPPED":
      setTyping(e.user.login, e.kind === "TYPING_STARTED");
      return;
    case "PRESENCE_CHANGED":
      setOnline(e.user.login, e.online);
  }
}

// showFetched reads a message of the open conversation whole (a sync
// change carries a light selection of it) and shows it; posted: new to
// the history. Messages are read at once and shown in the order their
// changes came; those that come while the conversation's first page is
// read wait for it.
let showing = Promise.resolve();
function showFetched(id, posted) {
  const conv = open;
  if (!conv) return;
  if (!conv.ready) {
    conv.pending.push([id, posted]);
    return;
  }
  if (posted && shown.has(id)) return; // shown already (the user's own post, as the server answered it)
  // An update is read if its message is shown, or is by the time the
  // changes before it are (its post's read may be on its way).
  const known = () => shown.has(id) || thread?.shown.has(id) || thread?.root.id === id;
  const read = (posted || known()) && readMessage(id);
  showing = showing.then(async () => {
    if (open !== conv || (!read && !known())) return;
    const message = await (read || readMessage(id));
    if (message && open === conv) show(message, posted);
  });
}

const readMessage = (id) =>
  api.gql(queries.message, { id }).then(
    (d) => d.message,
    () => null,
  );

// ---- The profile and blocked users ----

let blocked = new Set(); // logins the user blocked: their messages are collapsed
const revealed = new Set(); // ids of blocked users' messages the user chose to see

async function loadMe() {
  try {
    const { me, blockedUsers } = await api.gql(queries.me);
    showProfile(me);
    blocked = new Set(blockedUsers.map((u) => u.login));
    rerenderShown();
  } catch (err) {
    showSideError(err);
  }
}

let profile = null; // the user's profile, as last read or saved

function showProfile(me) {
  profile = me;
  renderMe(me);
  renderAvatarPreview();
  updateAuthor(me);
}

// renderMe shows the signed-in user in the top bar: their picture (or
// initials) beside their name.
function renderMe(user) {
  $("me").replaceChildren(avatar(user), ` ${user.firstname} ${user.lastname} (@${user.login})`);
}

// The profile panel (its picture and its form) exists while it is open (see index.html).
$("profile").addEventListener("toggle", () => {
  const panel = $("profile");
  panel.querySelector(".profile-panel")?.remove();
  if (!panel.open) return;
  panel.append($("profile-template").content.cloneNode(true));
  renderAvatarPreview();
  $("avatar-choose").addEventListener("click", () => $("avatar-input").click());
  $("avatar-input").addEventListener("change", (e) => {
    const [file] = e.target.files;
    e.target.value = ""; // the same file may be picked again
    if (file) changeAvatar(file);
  });
  $("avatar-remove").addEventListener("click", () => changeAvatar(null));
  showPush();
  $("push-on").addEventListener("click", turnPushOn);
  $("push-off").addEventListener("click", turnPushOff);
  $("push-previews").addEventListener("change", setPushPreviews);
  $("profile-firstname").value = profile?.firstname ?? "";
  $("profile-lastname").value = profile?.lastname ?? "";
  $("profile-bio").value = profile?.bio ?? "";
  $("profile-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("profile-error").textContent = "";
    try {
      const input = { firstname: $("profile-firstname").value.trim(), lastname: $("profile-lastname").value.trim(), bio: $("profile-bio").value };
      showProfile((await api.gql(queries.updateProfile, { input })).updateProfile);
      panel.open = false;
    } catch (err) {
      $("profile-error").textContent = err.message;
    }
  });
  $("profile-firstname").focus();
});

// ---- Notifications (Web Push) ----

// The browser subscribes at its push service with the server's VAPID key
// and the server is given the subscription (registerPushSubscription);
// the service worker (sw.js) shows what is pushed. Permission is asked only
// when the user presses "Turn on notifications".

const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
let pushBusy = false;

// pushStatus reads what the panel shows: the server's key (null: it sends
// no notifications), the previews choice, and whether this browser's
// subscription is registered with the server.
async function pushStatus() {
  const { vapidPublicKey, pushPreviews, pushSubscriptions } = await api.gql(queries.push);
  let sub = null;
  if (pushSupported()) {
    const reg = await navigator.serviceWorker.getRegistration("/");
    sub = (await reg?.pushManager.getSubscription().catch(() => null)) ?? null;
  }
  const on = !!sub && pushSubscriptions.some((s) => s.endpoint === sub.endpoint);
  return { key: vapidPublicKey, previews: pushPreviews, sub, on };
}

// showPush shows the state of notifications in the open profile panel.
async function showPush() {
  if (!$("push")) return;
  let st;
  try {
    st = await pushStatus();
  } catch (err) {
    if ($("push-state")) $("push-state").textContent = `Could not read the notification settings: ${err.message}`;
    return;
  }
  renderPush(st);
}

function renderPush({ key, previews, on }) {
  const state = $("push-state");
  if (!state) return; // the panel was closed meanwhile
  const off = $("push-off");
  const turnOn = $("push-on");
  $("push-previews").checked = previews;
  $("push-previews").disabled = !key;
  const hadFocus = document.activeElement === turnOn || document.activeElement === off;
  turnOn.hidden = off.hidden = true;
  if (!key) {
    state.textContent = "This server sends no notifications.";
  } else if (!window.isSecureContext) {
    state.textContent = "Not available: browsers allow notifications only to a page served over https.";
  } else if (!pushSupported()) {
    state.textContent = "Not supported: this browser cannot receive notifications from a web page.";
  } else if (on) {
    state.textContent = "On: this browser is told of direct messages, mentions and replies while you are away.";
    off.hidden = false;
  } else if (Notification.permission === "denied") {
    state.textContent = "Blocked by the browser: allow notifications for this site in the browser's settings, then turn them on here.";
  } else {
    state.textContent = "Off.";
    turnOn.hidden = false;
  }
  // The button pressed gave way to the other: keep the focus in the section.
  if (hadFocus) [turnOn, off].find((b) => !b.hidden)?.focus();
}

// turnPushOn asks the browser's permission (this runs on the button's
// click), registers the service worker, subscribes at the push service and
// registers the subscription with the server. Whatever fails is told in
// words, and a subscription the server did not take is dropped again.
async function turnPushOn() {
  if (pushBusy) return;
  pushBusy = true;
  $("push-error").textContent = "";
  $("push").setAttribute("aria-busy", "true");
  let sub = null;
  try {
    const permission = await Notification.requestPermission();
    if (permission !== "granted") {
      throw new Error(permission === "denied" ? "The browser blocks notifications for this site." : "Notifications were not allowed.");
    }
    $("push-state").textContent = "Turning on…";
    const { vapidPublicKey } = await api.gql(queries.push);
    if (!vapidPublicKey) throw new Error("This server sends no notifications.");
    await navigator.serviceWorker.register("/sw.js", { scope: "/" });
    const reg = await navigator.serviceWorker.ready;
    // The browser's push service may not answer at all (unreachable):
    // give up after a while rather than say "Turning on…" forever.
    let timer = 0;
    const timedOut = new Error("The browser's push service did not answer within 30 seconds. Try again later.");
    const late = new Promise((_, reject) => (timer = setTimeout(() => reject(timedOut), 30_000)));
    try {
      sub = await Promise.race([reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64urlBytes(vapidPublicKey) }), late]);
    } catch (err) {
      if (err === timedOut) throw err;
      throw new Error(`The browser could not subscribe at its push service (${err.name}: ${err.message}).`);
    } finally {
      clearTimeout(timer);
    }
    const { endpoint, keys } = sub.toJSON();
    await api.gql(queries.registerPush, { e: endpoint, p: keys.p256dh, a: keys.auth, d: await deviceName() });
    sub = null; // registered: keep it
  } catch (err) {
    await sub?.unsubscribe().catch(() => {});
    if ($("push-error")) $("push-error").textContent = `Notifications are not on: ${err.message}`;
  } finally {
    // Busy until the section says how things now stand.
    await showPush();
    pushBusy = false;
    $("push")?.removeAttribute("aria-busy");
  }
}

// turnPushOff drops the subscription at the server, then in the browser.
async function turnPushOff() {
  if (pushBusy) return;
  pushBusy = true;
  $("push-error").textContent = "";
  $("push").setAttribute("aria-busy", "true");
  try {
    const reg = await navigator.serviceWorker.getRegistration("/");
    const sub = await reg?.pushManager.getSubscription();
    if (sub) {
      await api.gql(queries.unregisterPush, { e: sub.endpoint });
      await sub.unsubscribe();
    }
  } catch (err) {
    if ($("push-error")) $("push-error").textContent = `Notifications are still on: ${err.message}`;
  } finally {
    // Busy until the section says how things now stand.
    await showPush();
    pushBusy = false;
    $("push")?.removeAttribute("aria-busy");
  }
}

async function setPushPreviews(e) {
  const box = e.target;
  $("push-error").textContent = "";
  box.disabled = true;
  try {
    box.checked = (await api.gql(queries.setPushPreviews, { p: box.checked })).setPushPreviews;
  } catch (err) {
    box.checked = !box.checked;
    if ($("push-error")) $("push-error").textContent = `The choice was not saved: ${err.message}`;
  } finally {
    box.disabled = false;
  }
}

// base64urlBytes decodes the server's VAPID public key for pushManager.subscribe.
function base64urlBytes(s) {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

// deviceName names this browser in the user's list of subscriptions.
async function deviceName() {
  const ua = navigator.userAgentData;
  if (!ua) return "this browser";
  const brand = ua.brands.find((b) => !/not.a.brand/i.test(b.brand))?.brand ?? "A browser";
  return ua.platform ? `${brand} on ${ua.platform}` : brand;
}

// A click on a notification in an open window: the service worker asks it
// to open the conversation.
navigator.serviceWorker?.addEventListener("message", (e) => {
  if (typeof e.data?.open === "string") location.hash = `#conversation/${encodeURIComponent(e.data.open)}`;
});

// ---- Avatars ----

// renderAvatarPreview shows the user's picture in the open profile panel,
// and the button that removes it when there is one.
function renderAvatarPreview() {
  const preview = $("avatar-preview");
  if (!preview || !profile) return;
  preview.replaceChildren(avatar(profile, { size: "large", label: true }));
  $("avatar-remove").hidden = !profile.avatar;
}

let avatarBusy = false;

// changeAvatar makes file the user's picture, uploaded as a message's files
// are (uploadFile: createUpload, its PUT, completeUpload, which checks it),
// then set with setAvatar; file null removes the picture.
async function changeAvatar(file) {
  if (avatarBusy) return;
  const status = $("avatar-status");
  const error = $("avatar-error");
  error.textContent = "";
  status.textContent = "";
  if (file && !/^image\/(jpeg|png|gif|webp)$/.test(file.type)) {
    error.textContent = `${file.name} is not an image: pick a JPEG, PNG, GIF or WebP picture.`;
    return;
  }
  avatarBusy = true;
  $("avatar-edit").setAttribute("aria-busy", "true");
  status.textContent = file ? `Uploading ${file.name}…` : "Removing your picture…";
  try {
    let id = null;
    if (file) id = (await uploadFile({ file, sent: false, upload: null, gone: false, chip: null })).id;
    showProfile((await api.gql(queries.setAvatar, { file: id })).setAvatar);
    if ($("avatar-status")) $("avatar-status").textContent = file ? "Your picture is set." : "Your picture was removed.";
  } catch (err) {
    if (!$("avatar-error")) return; // the panel was closed meanwhile
    $("avatar-status").textContent = "";
    $("avatar-error").textContent = avatarErrorText(file, err);
  } finally {
    avatarBusy = false;
    $("avatar-edit")?.removeAttribute("aria-busy");
  }
}

// avatarErrorText says in words why a picture was refused.
function avatarErrorText(file, err) {
  if (err.code === "BAD_USER_INPUT") return `${file?.name ?? "That file"} is not an image the server can read: pick a JPEG, PNG, GIF or WebP picture.`;
  if (err.code === "CONFLICT") return `${file?.name ?? "That file"} is in use already. Pick it again to upload a new copy.`;
  return file ? fileErrorText(file, err) : err.message;
}

const pictureKey = (picture) => picture?.blurhash ?? null;

// avatar draws a person's picture (an avatar or a room's icon): a round
// image of its smallest thumbnail over its blurhash while it loads, or
// their initials when they have none (or it does not load). Its text is
// empty unless label is set: the name is shown beside it, and a screen
// reader need not read it twice. size "small" or "large" (32 px otherwise).
function avatar(person, { size = "", label = false } = {}) {
  const name = [person.firstname, person.lastname].filter(Boolean).join(" ") || person.login;
  const box = document.createElement("span");
  box.className = `avatar${size ? ` ${size}` : ""}`;
  const initials = () => {
    box.classList.add("initials");
    box.style.removeProperty("background-image");
    box.style.setProperty("--hue", String(hue(person.login)));
    const letters = [person.firstname, person.lastname].filter(Boolean).map((w) => Array.from(w)[0]).join("") || Array.from(person.login).slice(0, 2).join("");
    box.textContent = letters.toUpperCase();
    if (label) {
      box.setAttribute("role", "img");
      box.setAttribute("aria-label", name);
    } else {
      box.setAttribute("aria-hidden", "true");
    }
  };
  const thumb = person.avatar?.thumbnails?.[0];
  if (!thumb) {
    initials();
    return box;
  }
  const placeholder = person.avatar.blurhash && blurhashImage(person.avatar.blurhash);
  if (placeholder) box.style.backgroundImage = `url("${placeholder}")`;
  const img = document.createElement("img");
  img.src = thumb.url;
  img.alt = label ? name : "";
  img.width = img.height = size === "large" ? 64 : size === "small" ? 20 : 32;
  img.decoding = "async";
  img.addEventListener("load", () => box.classList.add("loaded"));
  img.addEventListener("error", () => {
    img.remove();
    initials();
  });
  box.append(img);
  return box;
}

// hue picks a colour for a login's initials, the same on every page.
function hue(login) {
  let h = 0;
  for (const c of login) h = (h * 31 + c.codePointAt(0)) % 360;
  return h;
}

// updateAuthor redraws the shown messages of a user whose picture changed,
// as a newer message (or the user's own profile) tells: the server sends no
// event when a picture changes.
function updateAuthor(author) {
  for (const s of [...shown.values()]) {
    if (s.message.author.login !== author.login || pictureKey(s.message.author.avatar) === pictureKey(author.avatar)) continue;
    s.message.author = { ...s.message.author, avatar: author.avatar ?? null };
    s.li.replaceWith(render(s.message));
  }
}

async function setBlocked(login, block) {
  if (block && !confirm(`Block ${login}? Neither of you can send the other direct messages, and their messages are collapsed for you.`)) return;
  try {
    const d = await api.gql(block ? queries.block : queries.unblock, { l: login });
    blocked = new Set((block ? d.blockUser : d.unblockUser).map((u) => u.login));
    rerenderShown();
    loadInboxSoon();
  } catch (err) {
    showConversationError(err);
  }
}

function showSideError(err) {
  $("side-error").textContent = err ? err.message : "";
}

// loadInboxSoon reads the inbox after delay ms, once however many events
// ask for it meanwhile (a busy room's posts read it once a delay).
function loadInboxSoon(delay = 200) {
  if (inboxTimer) return;
  inboxTimer = setTimeout(() => {
    inboxTimer = 0;
    loadInbox();
  }, delay);
}

// The inbox is read a page at a time (conversations), newest activity
// first: the app shows the newest inboxWanted conversations, inboxPage at
// first and inboxPage more for each "More conversations". Every change
// reads them again from the newest (loadInboxSoon), so a conversation with
// new activity moves to the top, loaded before or not, and each shows once.
let inboxWanted = inboxPage;
let inboxCursor = null; // the endCursor of the last page shown
let inboxHasMore = false;
let inboxReads = 0; // reads started: only the last one's answer is shown
let inboxReading = 0; // the read under way, if any

// loadInbox reads the inbox's newest inboxWanted conversations again; with
// more, it asks for inboxPage more, read after the last one shown.
async function loadInbox(more = false) {
  if (!navigator.onLine) return;
  if (more) {
    inboxWanted = conversations.length + inboxPage;
    // A read under way reads as far as inboxWanted says when it asks for its next page.
    if (inboxReading) return;
  }
  const read = ++inboxReads;
  inboxReading = read;
  const list = more ? conversations.slice() : [];
  const seen = new Set(list.map((c) => c.id));
  let after = more ? inboxCursor : null;
  let hasMore = more ? inboxHasMore : false;
  const shown = conversations.length;
  $("inbox").setAttribute("aria-busy", "true");
  try {
    do {
      const first = Math.min(inboxMaxPage, inboxWanted - list.length);
      const { conversations: page } = await api.gql(queries.conversations, { first, after });
      if (read !== inboxReads || !started) return; // a later read is on its way
      // A conversation whose activity moved it between two pages' reads shows once.
      for (const { node } of page.edges) {
        if (seen.has(node.id)) continue;
        seen.add(node.id);
        list.push(node);
      }
      after = page.pageInfo.endCursor ?? after;
      hasMore = page.pageInfo.hasNextPage;
    } while (hasMore && list.length < inboxWanted);
    conversations = list;
    inboxCursor = after;
    inboxHasMore = hasMore;
    showSideError(null);
    renderInbox();
    // Asked for from the button, which may be gone now: the keyboard goes on from the first conversation it brought.
    const from = document.activeElement;
    if (more && list.length > shown && (from === $("inbox-more") || from === document.body)) {
      $("inbox").children[shown]?.querySelector("a")?.focus();
    }
  } catch (err) {
    if (read === inboxReads) showSideError(err);
  } finally {
    if (inboxReading === read) {
      inboxReading = 0;
      $("inbox").removeAttribute("aria-busy");
    }
  }
}

$("inbox-more").addEventListener("click", () => loadInbox(true));

function renderInbox() {
  const items = conversations.map((c) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    const direct = c.kind === "DIRECT";
    a.href = direct ? `#dm/${c.peer.login}` : `#room/${c.id}`;
    a.className = "conversation-link";
    if (open && open.id === c.id) a.setAttribute("aria-current", "page");
    const name = document.createElement("span");
    name.textContent = direct ? `@${c.peer.login}` : c.kind === "GROUP" ? `🔒 ${c.id}` : `# ${c.id}`;
    if (direct) {
      // A person by their names, their login beside.
      const names = document.createElement("span");
      names.textContent = displayName(c.peer);
      name.className = "login";
      a.append(avatar(c.peer, { size: "small" }), names);
    }
    a.append(name);
    if (direct) {
      const dot = document.createElement("span");
      dot.className = c.peerOnline ? "dot online" : "dot";
      dot.title = c.peerOnline ? "online" : "offline";
      a.append(dot);
    }
    if (c.muted) {
      const bell = document.createElement("span");
      bell.className = "muted";
      bell.textContent = "🔕";
      bell.title = "muted";
      a.append(bell);
    }
    if (c.unread > 0) {
      const badge = document.createElement("span");
      badge.className = c.mentions > 0 ? "badge mention" : "badge";
      badge.textContent = c.unread >= 100 ? "99+" : String(c.unread);
      // Read out after the count (the link's name keeps its visible text).
      const said = document.createElement("span");
      said.className = "visually-hidden";
      said.textContent = ` unread${c.mentions ? `, ${c.mentions} mentioning you` : ""}`;
      a.append(badge, said);
    }
    li.append(a);
    return li;
  });
  if (items.length === 0) items.push(emptyItem("Nothing here yet: join a room below, or write to someone with “Direct message to”."));
  $("inbox").replaceChildren(...items);
  $("inbox-more").hidden = !inboxHasMore;
  renderMute();
}

// openEntry is the open conversation's inbox entry as markRead answered it:
// the inbox shows a page at a time, and may not show it.
let openEntry = null;

// entryOf is a conversation's inbox entry, if the app has read it.
function entryOf(id) {
  return conversations.find((c) => c.id === id) ?? (openEntry?.id === id ? openEntry : null);
}

// renderMute shows the open conversation's mute button, pressed when muted;
// only a conversation of the inbox can be muted.
function renderMute() {
  const entry = open && entryOf(open.id);
  const b = $("mute");
  b.hidden = !entry;
  if (!entry) return;
  b.textContent = entry.muted ? "Unmute" : "Mute";
  b.setAttribute("aria-pressed", entry.muted ? "true" : "false");
}

$("mute").addEventListener("click", async () => {
  const entry = open && entryOf(open.id);
  if (!entry) return;
  try {
    await api.gql(queries.mute, { c: entry.id, m: !entry.muted });
    entry.muted = !entry.muted;
    renderInbox();
    loadInboxSoon();
  } catch (err) {
    showConversationError(err);
  }
});

let roomsAfter = null;
async function loadRooms(more = false) {
  try {
    const { rooms } = await api.gql(queries.rooms, { after: more ? roomsAfter : null });
    const items = rooms.edges.map(({ node }) => {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = `#room/${node.name}`;
      a.className = "conversation-link";
      a.textContent = `${node.kind === "PRIVATE_GROUP" ? "🔒" : "#"} ${node.name}`;
      if (node.icon) a.prepend(avatar({ login: node.name, avatar: node.icon }, { size: "small" }));
      if (node.banner) a.title = node.banner;
      li.append(a);
      return li;
    });
    if (more) $("rooms").append(...items);
    else $("rooms").replaceChildren(...(items.length ? items : [emptyItem("No rooms yet: create the first below.")]));
    roomsAfter = rooms.pageInfo.endCursor;
    $("rooms-more").hidden = !rooms.pageInfo.hasNextPage;
  } catch (err) {
    showSideError(err);
  }
}
$("rooms-more").addEventListener("click", () => loadRooms(true));

$("room-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const name = $("room-name").value.trim();
  const kind = $("room-private").checked ? "PRIVATE_GROUP" : "PUBLIC";
  try {
    await api.gql(queries.createRoom, { input: { name, kind } });
    e.target.reset();
    showSideError(null);
    loadRooms();
    loadInbox();
    location.hash = `#room/${name}`;
  } catch (err) {
    showSideError(err);
  }
});

$("dm-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const login = $("dm-login").value.trim();
  e.target.reset();
  location.hash = `#dm/${login}`;
});

// ---- The open conversation ----

// open is the conversation shown: { kind: "room" | "dm", id, name, peer,
// ready (its first page is shown), pending (the sync's changes that came
// before), pins (a room's pinned messages) }.
let open = null;
const conversationMain = document.querySelector("main.conversation");
let olderCursor = null; // messages(after:) for the next older page
let hasOlder = false;
let olderRead = null; // the older page being read
const shown = new Map(); // message id -> { message, li }
const typists = new Map(); // login -> timer
let replyTo = null; // the message the composer replies to
let editing = null; // the message the composer edits

addEventListener("hashchange", openFromHash);

function openFromHash() {
  if (!started) return;
  const [, kind, id] = location.hash.match(/^#(room|dm|conversation|join)\/(.+)$/) || [];
  if (!kind) {
    closeConversation();
    return;
  }
  const name = decodeURIComponent(id);
  if (kind === "join") {
    joinByLink(name);
    return;
  }
  if (kind === "conversation") {
    // A notification's link names the conversation by its id: a room's
    // name, or a direct conversation's two logins joined by ':'.
    const [a, b] = name.split(":");
    const peer = a === api.currentUser().login ? b : a;
    history.replaceState(null, "", b === undefined ? `#room/${a}` : `#dm/${peer}`);
    openFromHash();
    return;
  }
  if (kind === "room") openConversation({ kind, id: name, name });
  else openConversation({ kind, id: [api.currentUser().login, name].sort().join(":"), name, peer: name });
}

function closeConversation() {
  closeThread();
  delete conversationMain.dataset.open;
  document.querySelector(".chat").classList.remove("in-conversation");
  $("block-peer")?.remove();
  roomLive?.cancel();
  roomLive = null;
  open = null;
  renderPins();
  closeInvites();
  $("invites-toggle").hidden = true;
  olderCursor = null;
  hasOlder = false;
  readUpTo = null;
  shown.clear();
  for (const t of typists.values()) clearTimeout(t);
  typists.clear();
  $("messages").replaceChildren();
  $("typing").textContent = "";
  $("composer").hidden = true;
  clearFiles();
  $("join").hidden = true;
  $("leave").hidden = true;
  $("member-form").hidden = true;
  $("mute").hidden = true;
  $("conversation-title").textContent = "Pick a conversation";
  $("jump-new").hidden = true;
  $("join-status").hidden = true;
  $("join-text").textContent = "";
  $("join-error").textContent = "";
  $("join-hint").hidden = true;
  renderEmpty();
  $("conversation-icon").replaceChildren();
  $("conversation-info").textContent = "";
}

async function openConversation(conv) {
  closeConversation();
  conv.ready = false;
  conv.pending = [];
  conv.pins = [];
  open = conv;
  document.querySelector(".chat").classList.add("in-conversation");
  renderInbox();
  $("conversation-title").textContent = conv.kind === "dm" ? `@${conv.peer}` : `# ${conv.name}`;
  renderConversationIcon();
  if (conv.kind === "dm") {
    const b = button(blockPeerText(conv.peer), () => setBlocked(conv.peer, !blocked.has(conv.peer)));
    b.id = "block-peer";
    $("conversation-info").after(b);
  }
  $("conversation-error").textContent = "";
  setComposerMode(null);
  // Where the user stopped reading, for the "New messages" line.
  const entry = entryOf(conv.id);
  conv.unreadFrom = entry?.unread > 0 ? { readUpTo: entry.readUpTo ?? null } : null;
  if (conv.kind === "room") await Promise.all([refreshPresence(), loadPins()]); // its creator, moderators and pins, for the message actions
  const page = await loadPage();
  if (open !== conv || !page) return;
  // The sync's changes to it that came while its page was read.
  conv.ready = true;
  for (const [id, posted] of conv.pending.splice(0)) showFetched(id, posted);
  markNewMessages(conv);
  $("composer").hidden = false;
  renderEmpty();
  $("leave").hidden = conv.kind !== "room";
  // The message box now takes its place under the history: show the newest
  // message above it again.
  const list = $("messages");
  list.scrollTop = list.scrollHeight;
  // Its changes come with the sync; a room's typing and presence, live, on
  // a subscription of their own (a direct conversation's come with the
  // inbox's).
  if (conv.kind === "room") roomLive = api.subscribe(queries.roomLive, () => ({ room: conv.name }), "roomEvents", onRoomLive, null);
  if (conv.kind === "dm") refreshPresence(); // a room's was read before its page
  // Open: its history read, the message box shown, its changes on their
  // way with the sync (what the browser tests wait for).
  conversationMain.dataset.open = `${conv.kind}/${conv.name}`;
  markReadSoon();
  $("composer-input").focus();
  // A first page too short to scroll: read older ones until it scrolls.
  while (open === conv && list.scrollHeight <= list.clientHeight && (await loadOlder()));
}

// renderConversationIcon shows the open room's icon beside its name, when it
// has one, or the peer's picture in a direct conversation (as the inbox read it).
function renderConversationIcon() {
  const peer = open?.kind === "dm" ? entryOf(open.id)?.peer : null;
  const picture = open?.kind === "room" ? open.icon && avatar({ login: open.name, avatar: open.icon }) : peer && avatar(peer);
  $("conversation-icon").replaceChildren(...(picture ? [picture] : []));
}

function showConversationError(err) {
  $("conversation-error").textContent = err ? err.message : "";
}

// loadPage reads the next older page of the open conversation's history.
async function loadPage() {
  const conv = open;
  try {
    const data =
      conv.kind === "room"
        ? (await api.gql(queries.messages, { room: conv.name, first: pageSize, after: olderCursor })).messages
        : (await api.gql(queries.directMessages, { with: conv.peer, first: pageSize, after: olderCursor })).directMessages;
    if (open !== conv) return null;
    olderCursor = data.pageInfo.endCursor;
    hasOlder = data.pageInfo.hasNextPage;
    const list = $("messages");
    const atStart = list.childElementCount === 0;
    const before = list.scrollHeight;
    // The page is newest first; the history shows oldest at the top.
    const items = [];
    for (const { node } of data.edges.slice().reverse()) {
      if (!shown.has(node.id)) items.push(render(node));
    }
    list.prepend(...items);
    arrangeHistory();
    if (atStart) list.scrollTop = list.scrollHeight;
    else list.scrollTop += list.scrollHeight - before; // keep what the user was reading in place
    return data;
  } catch (err) {
    if (err.code === "FORBIDDEN" && conv.kind === "room") {
      $("join").hidden = false; // a public room the user has not joined
      $("conversation-info").textContent = "Join the room to read and post.";
      return null;
    }
    showConversationError(err);
    return null;
  }
}

// refreshNewest shows the messages of the newest page not shown yet.
async function refreshNewest() {
  const conv = open;
  try {
    const data =
      conv.kind === "room"
        ? (await api.gql(queries.messages, { room: conv.name, first: pageSize })).messages
        : (await api.gql(queries.directMessages, { with: conv.peer, first: pageSize })).directMessages;
    if (open !== conv || shown.size === 0) return; // not read yet: loadPage shows them
    // The history shows the newest page already: what it lacks is newer.
    for (const { node } of data.edges.slice().reverse()) if (!shown.has(node.id)) show(node, true);
  } catch {
    /* the subscription replays what it can */
  }
}

// loadOlder reads the next older page (or waits for the one being read);
// it reports whether there was one to read.
async function loadOlder() {
  if (olderRead) {
    await olderRead; // one at a time: the one being read
    return true;
  }
  if (!hasOlder || !open) return false;
  const list = $("messages");
  list.setAttribute("aria-busy", "true");
  olderRead = loadPage();
  try {
    await olderRead;
  } finally {
    olderRead = null;
    list.setAttribute("aria-busy", "false");
  }
  return true;
}

$("messages").addEventListener("scroll", () => {
  if ($("messages").scrollTop < 80) loadOlder();
});
// Keyboard: Home in the history loads older pages too.
$("messages").addEventListener("keydown", (e) => {
  if (e.key === "Home" || e.key === "PageUp") loadOlder();
});

$("leave").addEventListener("click", async () => {
  try {
    await api.gql(queries.leaveRoom, { room: open.name });
    loadInbox();
    location.hash = "";
  } catch (err) {
    showConversationError(err);
  }
});

$("member-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    await api.gql(queries.addMember, { g: open.name, l: $("member-login").value.trim() });
    e.target.reset();
    refreshPresence();
  } catch (err) {
    showConversationError(err);
  }
});

$("join").addEventListener("click", async () => {
  try {
    await api.gql(queries.joinRoom, { room: open.name });
    loadInbox();
    openConversation(open);
  } catch (err) {
    showConversationError(err);
  }
});

// ---- Live events ----

// show adds a message to the history, or updates it where it is shown.
function show(message, posted) {
  showInThread(message, posted);
  const known = shown.get(message.id);
  if (known) {
    // An update (an edit, a preview card) may grow the message: the history
    // stays at its bottom if it was there.
    const list = $("messages");
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 60;
    known.li.replaceWith(render(message));
    arrangeHistory();
    if (atBottom) list.scrollTop = list.scrollHeight;
    return;
  }
  if (!posted) return; // an edit or reaction of a message older than the pages read
  if (!message.system) updateAuthor(message.author); // a picture changed since: its other messages show it too
  const root = message.replyToId && shown.get(message.replyToId);
  if (root) {
    // A new reply: its thread's root counts it (a reply seen before is known above).
    root.message.replyCount = (root.message.replyCount ?? 0) + 1;
    root.li.replaceWith(render(root.message));
  }
  const list = $("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 60;
  list.append(render(message));
  arrangeHistory();
  if (atBottom || message.author.login === api.currentUser().login) list.scrollTop = list.scrollHeight;
  if (message.author.login !== api.currentUser().login && !message.system) {
    $("announce").textContent = `${message.author.login}: ${message.content || filesText(message.attachments)}`;
  }
  markReadSoon();
}

let readTimer = 0;
let readUpTo = null;
function markReadSoon() {
  clearTimeout(readTimer);
  readTimer = setTimeout(async () => {
    const last = $("messages").lastElementChild;
    if (!open || !last || document.hidden || last.dataset.id === readUpTo) return;
    try {
      readUpTo = last.dataset.id;
      const { markRead: entry } = await api.gql(queries.markRead, { c: open.id, upTo: readUpTo });
      // Its entry, for its mute button and its peer's picture when the inbox does not show it (not among its pages yet).
      if (open?.id === entry.id) openEntry = entry;
      renderMute();
      renderConversationIcon();
      loadInboxSoon();
    } catch {
      /* not fatal: the count stays */
    }
  }, 500);
}
document.addEventListener("visibilitychange", markReadSoon);

// ---- Rendering a message ----

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

function render(message) {
  const mine = message.author.login === api.currentUser().login;
  const li = document.createElement("li");
  const me = api.currentUser().login;
  li.className = `message${mine && !message.system ? " own" : ""}${message.system ? " system" : ""}${message.deleted ? " deleted" : ""}${message.mentions.includes(me) ? " mention" : ""}`;
  li.id = `m-${message.id}`;
  li.dataset.id = message.id;
  li.dataset.posted = message.postedAt;
  // A reply, an edited or a pinned message shows its line of details: it opens a run.
  const pinned = open?.kind === "room" && pinnedIds().has(message.id);
  li.dataset.author = message.system || message.replyToId || message.editedAt || pinned ? "" : message.author.login;
  // The author's picture beside the message, its text beside the picture.
  const body = document.createElement("div");
  body.className = "body";

  const meta = document.createElement("div");
  meta.className = "meta";
  const author = document.createElement("strong");
  author.textContent = message.system ? message.author.login : displayName(message.author);
  author.title = `@${message.author.login}`;
  const time = document.createElement("time");
  time.dateTime = message.postedAt;
  time.textContent = timeFormat.format(new Date(message.postedAt)); // the day is its separator's
  meta.append(author, " ", time);
  if (message.editedAt) meta.append(" ", tag("(edited)"));
  if (pinned) meta.append(" ", tag("📌 pinned"));
  if (message.replyToId) {
    const root = shown.get(message.replyToId)?.message;
    const link = document.createElement("a");
    link.href = `#m-${message.replyToId}`;
    link.className = "reply-to";
    link.textContent = root ? `↪ ${root.author.login}: ${(root.content || filesText(root.attachments)).slice(0, 40)}` : "↪ in a thread";
    link.addEventListener("click", (e) => {
      e.preventDefault(); // the hash is the open conversation's
      $(`m-${message.replyToId}`)?.scrollIntoView({ block: "center" });
    });
    meta.append(" ", link);
  }
  const content = document.createElement("p");
  content.className = "content";
  content.textContent = message.deleted ? "This message was deleted." : message.hidden && !message.content ? "This message was hidden." : message.content;
  body.append(meta, content);

  const who = message.author.login;
  const isBlocked = !mine && !message.system && blocked.has(who) && !revealed.has(message.id);
  // A blocked user's picture is not shown either: their initials are.
  if (!message.system) li.append(avatar(isBlocked ? { ...message.author, avatar: null } : message.author));
  li.append(body);
  if (isBlocked) {
    li.classList.add("blocked");
    content.textContent = `A message from ${who}, whom you blocked.`;
    const actions = document.createElement("div");
    actions.className = "actions";
    actions.append(
      button("Show", () => {
        revealed.add(message.id);
        show(message, false);
      }),
    );
    body.append(actions);
    shown.set(message.id, { message, li });
    return li;
  }

  if (!message.deleted && message.attachments?.length) body.append(renderAttachments(message));
  if (!message.deleted && message.preview) body.append(renderPreview(message.preview));

  if (!message.system && !message.deleted) {
    // Under the message: its reactions and its thread. On hover or focus, a
    // toolbar over it: the quick reactions not given yet and the actions.
    const reactions = document.createElement("div");
    reactions.className = "reactions";
    const actions = document.createElement("div");
    actions.className = "actions";
    actions.setAttribute("role", "toolbar");
    actions.setAttribute("aria-label", "Message actions");
    const emojis = [...new Set([...message.reactions.map((r) => r.emoji), ...quickReactions])];
    for (const emoji of emojis) {
      const r = message.reactions.find((x) => x.emoji === emoji);
      const b = button(r ? `${emoji} ${r.count}` : emoji, () => react(message, emoji, !r?.reactedByMe));
      b.setAttribute("aria-pressed", r?.reactedByMe ? "true" : "false");
      b.setAttribute("aria-label", `React ${emoji}${r ? `, ${r.count}` : ""}`);
      (r ? reactions : actions).append(b);
    }
    if (message.replyCount > 0) {
      const t = button(`${message.replyCount} ${message.replyCount === 1 ? "reply" : "replies"}`, () => openThread(message));
      t.className = "thread-link";
      t.setAttribute("aria-haspopup", "dialog");
      reactions.append(t);
    }
    actions.append(button("Reply", () => setComposerMode({ replyTo: message })));
    if (mayPin()) actions.append(button(pinned ? "Unpin" : "Pin", () => setPinned(message, !pinned)));
    if (mine) {
      actions.append(button("Edit", () => setComposerMode({ edit: message })));
      actions.append(button("Delete", () => remove(message)));
    } else {
      const b = button(blocked.has(who) ? "Unblock" : "Block", () => setBlocked(who, !blocked.has(who)));
      b.setAttribute("aria-label", `${blocked.has(who) ? "Unblock" : "Block"} ${who}`);
      actions.append(b);
      if (open?.moderates && who !== open.creator) {
        if (!message.hidden) actions.append(button("Hide", () => moderate(queries.hide, { id: message.id }, "hideMessage")));
        for (const [text, query] of [["Remove", queries.removeParticipant], ["Ban", queries.ban]]) {
          const m = button(text, () => moderate(query, { r: open.name, l: who }, null, `${text} ${who} from ${open.name}?`));
          m.setAttribute("aria-label", `${text} ${who}`);
          actions.append(m);
        }
      }
    }
    rovingFocus(actions);
    body.append(reactions, actions);
  }
  shown.set(message.id, { message, li });
  return li;
}

// rovingFocus makes a toolbar one stop of the tab order: Tab reaches its
// first button, the arrow keys (and Home, End) move along it.
function rovingFocus(toolbar) {
  const buttons = [...toolbar.querySelectorAll("button")];
  buttons.forEach((b, i) => (b.tabIndex = i === 0 ? 0 : -1));
  toolbar.addEventListener("keydown", (e) => {
    const at = buttons.indexOf(document.activeElement);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: buttons.length - 1 }[e.key];
    if (at < 0 || to === undefined) return;
    e.preventDefault();
    const next = buttons[(to + buttons.length) % buttons.length];
    buttons[at].tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });
}

// displayName is a user's names as they gave them, their login when they
// have none (a deleted user).
const displayName = (user) => [user.firstname, user.lastname].filter(Boolean).join(" ") || user.login;

// ---- The history's layout: days, runs of one author, the new messages ----

const weekdayFormat = new Intl.DateTimeFormat(undefined, { weekday: "long", month: "long", day: "numeric" });
const yearFormat = new Intl.DateTimeFormat(undefined, { weekday: "long", year: "numeric", month: "long", day: "numeric" });

function dayLabel(date) {
  const today = new Date();
  const yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
  if (date.toDateString() === today.toDateString()) return "Today";
  if (date.toDateString() === yesterday.toDateString()) return "Yesterday";
  return (date.getFullYear() === today.getFullYear() ? weekdayFormat : yearFormat).format(date);
}

// A message within this long of the one before, by the same author, joins
// its run: shown without the name and picture again.
const runGap = 5 * 60 * 1000;

// arrangeHistory puts a day's separator before its first message and marks
// the messages that continue a run of one author. It runs after every
// change to the history: the pages read, a message added or updated.
function arrangeHistory() {
  const list = $("messages");
  for (const s of list.querySelectorAll(":scope > li.day")) s.remove();
  let previous = null;
  for (const li of [...list.children]) {
    if (!li.classList.contains("message")) continue;
    const at = new Date(li.dataset.posted);
    if (!previous || new Date(previous.dataset.posted).toDateString() !== at.toDateString()) {
      const day = document.createElement("li");
      day.className = "day";
      const label = document.createElement("span");
      label.textContent = dayLabel(at);
      day.append(label);
      // Before the "New messages" line when it opens the day.
      const line = li.previousElementSibling?.classList.contains("new-line") ? li.previousElementSibling : li;
      line.before(day);
      previous = null;
    }
    const continues =
      previous &&
      li.dataset.author &&
      li.dataset.author === previous.dataset.author &&
      !li.previousElementSibling?.classList.contains("new-line") &&
      at - new Date(previous.dataset.posted) < runGap;
    li.classList.toggle("grouped", Boolean(continues));
    previous = li;
  }
  renderEmpty();
}

// renderEmpty says what to do where there is nothing to show.
function renderEmpty() {
  const empty = $("conversation-empty");
  if (!open) {
    empty.textContent = "No conversation is open. Pick one in the inbox or the rooms, create a room, or write to someone with “Direct message to”.";
    empty.hidden = !$("join-status").hidden; // an invite link says what to do instead
  } else {
    empty.textContent = open.kind === "dm" ? `No messages with @${open.peer} yet: write the first below.` : "No messages here yet: say hello below.";
    empty.hidden = $("messages").querySelector("li.message:not(.system)") !== null || $("composer").hidden;
  }
}

function emptyItem(text) {
  const li = document.createElement("li");
  li.className = "empty";
  li.textContent = text;
  return li;
}

// markNewMessages draws the "New messages" line above the first message
// after the user's read mark (when the inbox counted unread ones there),
// and offers a jump to it while it is out of sight.
function markNewMessages(conv) {
  if (!conv.unreadFrom) return;
  const list = $("messages");
  const me = api.currentUser().login;
  const messages = [...list.querySelectorAll(":scope > li.message")];
  const read = conv.unreadFrom.readUpTo ? messages.findIndex((li) => li.dataset.id === conv.unreadFrom.readUpTo) : -1;
  // The mark is older than the page read: every message shown is new.
  const first = messages.slice(read >= 0 ? read + 1 : 0).find((li) => li.dataset.author !== me);
  if (!first) return;
  const line = document.createElement("li");
  line.className = "new-line";
  line.id = "new-line";
  const label = document.createElement("span");
  label.textContent = "New messages";
  line.append(label);
  first.before(line);
  arrangeHistory();
  list.scrollTop = list.scrollHeight;
  updateJump();
}

function updateJump() {
  const line = $("new-line");
  const list = $("messages");
  $("jump-new").hidden = !line || line.offsetTop >= list.scrollTop;
}
$("messages").addEventListener("scroll", updateJump);
$("jump-new").addEventListener("click", () => {
  $("new-line")?.scrollIntoView({ block: "start" });
  updateJump();
  $("messages").focus();
});

// renderAttachments shows a message's files: images inline from their 640
// pixel thumbnail (the smallest there is if the image is small), in a box of
// their size reserved before they load, each a link to the whole image;
// other files as download links with their name and size.
function renderAttachments(message) {
  const box = document.createElement("div");
  box.className = "attachments";
  for (const a of message.attachments) {
    const link = document.createElement("a");
    link.href = a.url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    const thumb = a.width != null ? (a.thumbnails[1] ?? a.thumbnails[0] ?? { url: a.url, width: a.width, height: a.height }) : null;
    if (thumb) {
      link.className = "image";
      link.title = `${a.name} (opens the whole image)`;
      const placeholder = a.blurhash && blurhashImage(a.blurhash);
      if (placeholder) link.style.backgroundImage = `url("${placeholder}")`;
      const img = document.createElement("img");
      img.src = thumb.url;
      img.alt = a.name;
      img.width = thumb.width;
      img.height = thumb.height;
      img.loading = "lazy";
      img.decoding = "async";
      img.addEventListener("error", () => refreshLinks(message), { once: true });
      img.addEventListener("load", () => link.classList.add("loaded")); // no blur behind a transparent image
      link.append(img);
    } else {
      link.className = "file";
      link.download = a.name;
      link.textContent = `📄 ${a.name} · ${humanSize(a.size)}`;
      link.setAttribute("aria-label", `Download ${a.name}, ${humanSize(a.size)}`);
    }
    box.append(link);
  }
  return box;
}

// blurhashImage paints a blurhash (blurha.sh) as a small PNG data URL, shown
// behind an image while it loads; null if the hash does not decode.
const blurhashes = new Map(); // hash -> data URL
function blurhashImage(hash) {
  if (blurhashes.has(hash)) return blurhashes.get(hash);
  let url = null;
  try {
    const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~";
    const num = (str) => {
      let v = 0;
      for (const c of str) {
        const d = digits.indexOf(c);
        if (d < 0) throw new Error("not base 83");
        v = v * 83 + d;
      }
      return v;
    };
    const size = num(hash[0]);
    const nx = (size % 9) + 1;
    const ny = Math.floor(size / 9) + 1;
    if (hash.length !== 4 + 2 * nx * ny) throw new Error("bad length");
    const max = (num(hash[1]) + 1) / 166;
    const toLinear = (v) => ((v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    const toSRGB = (v) => {
      v = Math.min(1, Math.max(0, v));
      return Math.round(v <= 0.0031308 ? v * 12.92 * 255 : (1.055 * v ** (1 / 2.4) - 0.055) * 255);
    };
    const signPow = (v) => Math.sign(v) * Math.abs(v) ** 2;
    const colors = [];
    for (let i = 0; i < nx * ny; i++) {
      if (i === 0) {
        const v = num(hash.slice(2, 6));
        colors.push([toLinear(v >> 16), toLinear((v >> 8) & 255), toLinear(v & 255)]);
      } else {
        const v = num(hash.slice(4 + i * 2, 6 + i * 2));
        colors.push([Math.floor(v / 361), Math.floor(v / 19) % 19, v % 19].map((q) => signPow((q - 9) / 9) * max));
      }
    }
    const w = 32;
    const h = 32;
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext("2d");
    const pixels = ctx.createImageData(w, h);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const rgb = [0, 0, 0];
        for (let j = 0; j < ny; j++) {
          for (let i = 0; i < nx; i++) {
            const basis = Math.cos((Math.PI * x * i) / w) * Math.cos((Math.PI * y * j) / h);
            const c = colors[i + j * nx];
            for (let k = 0; k < 3; k++) rgb[k] += c[k] * basis;
          }
        }
        const o = 4 * (x + y * w);
        pixels.data.set([toSRGB(rgb[0]), toSRGB(rgb[1]), toSRGB(rgb[2]), 255], o);
      }
    }
    ctx.putImageData(pixels, 0, 0);
    url = canvas.toDataURL("image/png");
  } catch {
    /* the neutral colour of the box stays */
  }
  blurhashes.set(hash, url);
  return url;
}

// refreshLinks reads a message again when one of its images does not load:
// its signed URLs last an hour or more, and a page stays open longer. Once a
// minute at most for each message.
const linksRead = new Map(); // message id -> when its links were read again
async function refreshLinks(message) {
  if (Date.now() - (linksRead.get(message.id) ?? 0) < 60_000) return;
  linksRead.set(message.id, Date.now());
  try {
    const { message: fresh } = await api.gql(queries.message, { id: message.id });
    if (fresh) show(fresh, false);
  } catch {
    /* the image stays missing; its link still opens the file */
  }
}

// renderPreview shows the card of the page a message links to. Its image is
// shown only from this server: the page's policy (and the reader's privacy)
// keeps the app from loading anything from other sites.
function renderPreview(p) {
  const card = document.createElement("aside");
  card.className = "preview";
  card.setAttribute("aria-label", `Link preview: ${p.title || p.url}`);
  if (p.imageUrl && sameOrigin(p.imageUrl)) {
    const img = document.createElement("img");
    img.src = p.imageUrl;
    img.alt = "";
    img.loading = "lazy";
    card.append(img);
  }
  const text = document.createElement("div");
  if (p.siteName) {
    const site = document.createElement("span");
    site.className = "site";
    site.textContent = p.siteName;
    text.append(site);
  }
  const title = document.createElement("a");
  title.className = "title";
  title.href = p.url;
  title.target = "_blank";
  title.rel = "noopener noreferrer";
  title.textContent = p.title || p.url;
  text.append(title);
  if (p.description) {
    const d = document.createElement("p");
    d.textContent = p.description;
    text.append(d);
  }
  card.append(text);
  return card;
}

function sameOrigin(u) {
  try {
    return new URL(u, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

// humanSize writes a size in bytes as people read it: 980 B, 12 kB, 1.2 MB.
function humanSize(bytes) {
  const units = ["B", "kB", "MB", "GB"];
  let n = bytes;
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return i === 0 ? `${n} B` : `${n < 10 ? n.toFixed(1).replace(/\.0$/, "") : Math.round(n)} ${units[i]}`;
}

const filesText = (attachments) =>
  attachments?.length === 1 ? `sent ${attachments[0].name}` : `sent ${attachments?.length ?? 0} files`;

function tag(text) {
  const s = document.createElement("span");
  s.className = "tag";
  s.textContent = text;
  return s;
}

function button(text, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onClick);
  return b;
}

async function react(message, emoji, add) {
  try {
    const d = await api.gql(add ? queries.addReaction : queries.removeReaction, { id: message.id, emoji });
    show(add ? d.addReaction : d.removeReaction, false);
  } catch (err) {
    showConversationError(err);
  }
}

// moderate runs a moderation mutation; field names its result when it is
// the message, shown as it now is.
async function moderate(query, vars, field, question) {
  if (question && !confirm(question)) return;
  try {
    const d = await api.gql(query, vars);
    if (field) show(d[field], false);
  } catch (err) {
    showConversationError(err);
  }
}

// rerenderShown renders the shown messages again, and a direct
// conversation's block button, after what decides their actions changed
// (blocks, who moderates).
function rerenderShown() {
  for (const { message, li } of [...shown.values()]) li.replaceWith(render(message));
  arrangeHistory();
  const b = $("block-peer");
  if (b && open?.peer) b.textContent = blockPeerText(open.peer);
}

const blockPeerText = (login) => `${blocked.has(login) ? "Unblock" : "Block"} @${login}`;

async function remove(message) {
  if (!confirm("Delete this message for everyone?")) return;
  try {
    show((await api.gql(queries.delete, { id: message.id })).deleteMessage, false);
  } catch (err) {
    showConversationError(err);
  }
}

// ---- Pinned messages ----

// A room's pinned messages (Room.pinnedMessages, the newest pin first): a
// button in the conversation's header says how many and opens their list,
// each a link to the message in the history; the message actions pin and
// unpin for whoever may (in a public room its creator and moderators, in a
// group any member). MESSAGE_PINNED and MESSAGE_UNPINNED come with the
// sync: the list is read again.

async function loadPins() {
  const conv = open;
  if (conv?.kind !== "room") return;
  try {
    const { room } = await api.gql(queries.pins, { name: conv.name });
    if (open !== conv) return;
    const before = new Set(conv.pins.map((p) => p.message.id));
    conv.pins = room?.pinnedMessages ?? [];
    const after = new Set(conv.pins.map((p) => p.message.id));
    // The messages pinned or unpinned show it (their tag, their action).
    for (const id of new Set([...before, ...after])) {
      const s = shown.get(id);
      if (before.has(id) !== after.has(id) && s) s.li.replaceWith(render(s.message));
    }
    arrangeHistory();
    renderPins();
  } catch {
    /* the list stays as it was */
  }
}

const pinnedIds = () => new Set((open?.pins ?? []).map((p) => p.message.id));

// mayPin says whether the user may pin in the open conversation.
function mayPin() {
  if (open?.kind !== "room" || !open.participants) return false;
  if (!open.group) return !!open.moderates;
  return open.participants.includes(api.currentUser().login) || open.participants.length >= 100;
}

async function setPinned(message, pin) {
  showConversationError(null);
  try {
    await api.gql(pin ? queries.pin : queries.unpin, { id: message.id });
    await loadPins();
    $("announce").textContent = pin ? "Message pinned." : "Message unpinned.";
  } catch (err) {
    showConversationError(err);
  }
}

function renderPins() {
  const pins = open?.pins ?? [];
  const toggle = $("pins-toggle");
  toggle.hidden = pins.length === 0;
  toggle.textContent = `📌 ${pins.length} pinned`;
  toggle.setAttribute("aria-label", `${pins.length} pinned message${pins.length === 1 ? "" : "s"}`);
  if (pins.length === 0) $("pins").hidden = true;
  toggle.setAttribute("aria-expanded", String(!$("pins").hidden));
  const may = mayPin();
  $("pins-list").replaceChildren(
    ...pins.map((p) => {
      const li = document.createElement("li");
      const m = p.message;
      const link = document.createElement("a");
      link.href = `#m-${m.id}`;
      link.className = "pin-link";
      const who = document.createElement("strong");
      who.textContent = displayName(m.author);
      const text = m.deleted ? "This message was deleted." : m.hidden && !m.content ? "This message was hidden." : m.content || filesText(m.attachments);
      link.append(who, `: ${text.length > 120 ? `${text.slice(0, 120)}…` : text}`);
      link.addEventListener("click", (e) => {
        e.preventDefault(); // the hash is the open conversation's
        jumpTo(m.id);
      });
      const by = document.createElement("span");
      by.className = "pin-by";
      by.textContent = `pinned by ${p.pinnedBy.login} · ${dayFormat.format(new Date(p.pinnedAt))}`;
      li.append(link, by);
      if (may) {
        const b = button("Unpin", () => setPinned(m, false));
        b.setAttribute("aria-label", `Unpin ${who.textContent}'s message`);
        li.append(b);
      }
      return li;
    }),
  );
}

$("pins-toggle").addEventListener("click", () => {
  closeInvites(); // one panel at a time
  $("pins").hidden = !$("pins").hidden;
  $("pins-toggle").setAttribute("aria-expanded", String(!$("pins").hidden));
  if (!$("pins").hidden) $("pins-list").querySelector("a")?.focus();
});
$("pins").addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  $("pins").hidden = true;
  $("pins-toggle").setAttribute("aria-expanded", "false");
  $("pins-toggle").focus();
});

// jumpTo scrolls the history to a message, reading older pages until it
// is shown (a pinned message may be far back), and gives it the focus.
async function jumpTo(id) {
  const conv = open;
  for (let pages = 0; !shown.has(id) && open === conv && pages < 100 && (await loadOlder()); pages++);
  if (open !== conv) return;
  const li = shown.get(id)?.li;
  if (!li) {
    showConversationError(new Error("That message is not in the history you can read."));
    return;
  }
  $("pins").hidden = true;
  $("pins-toggle").setAttribute("aria-expanded", "false");
  li.tabIndex = -1;
  li.scrollIntoView({ block: "center" });
  li.focus({ preventScroll: true });
  li.classList.add("search-found");
  setTimeout(() => li.classList.remove("search-found"), 2000);
}

// ---- Invite links (a private group's) ----

// A group's creator and moderators make invite links (createInvite: how
// long it lasts and how many may use it), copy them (the token is shown
// once), see them (Room.invites: uses, expiry) and revoke them. A link is
// the app's address with #join/<token>: opened by someone signed in, it
// joins them (joinByInvite); signed out, they log in or sign up first.

const mayInvite = () => open?.kind === "room" && open.group && open.moderates;

function renderInvitesButton() {
  $("invites-toggle").hidden = !mayInvite();
  if (!mayInvite()) closeInvites();
}

function closeInvites() {
  $("invites").hidden = true;
  $("invites-toggle").setAttribute("aria-expanded", "false");
  $("invite-new").hidden = true;
  $("invite-link").value = "";
  $("invite-status").textContent = "";
  $("invite-error").textContent = "";
}

$("invites-toggle").addEventListener("click", () => {
  if (!$("invites").hidden) {
    closeInvites();
    return;
  }
  $("pins").hidden = true; // one panel at a time
  $("pins-toggle").setAttribute("aria-expanded", "false");
  $("invites").hidden = false;
  $("invites-toggle").setAttribute("aria-expanded", "true");
  loadInvites();
  $("invite-expiry").focus();
});
$("invites").addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  closeInvites();
  $("invites-toggle").focus();
});
$("invites-close").addEventListener("click", () => {
  closeInvites();
  $("invites-toggle").focus();
});

async function loadInvites() {
  const conv = open;
  try {
    const { room } = await api.gql(queries.invites, { name: conv.name });
    if (open === conv) renderInvites(room?.invites ?? []);
  } catch (err) {
    if (open === conv) $("invite-error").textContent = err.message;
  }
}

function renderInvites(invites) {
  const now = Date.now();
  const items = invites.map((inv) => {
    const li = document.createElement("li");
    const text = document.createElement("span");
    const expired = Date.parse(inv.expiresAt) <= now;
    const usedUp = inv.uses >= inv.maxUses;
    const state = expired ? "expired" : usedUp ? "used up" : `expires ${dayFormat.format(new Date(inv.expiresAt))}`;
    text.textContent = `Made by @${inv.createdBy.login} ${dayFormat.format(new Date(inv.createdAt))} · used ${inv.uses} of ${inv.maxUses} · ${state}`;
    li.append(text);
    if (!expired && !usedUp) {
      const b = button("Revoke", () => revokeInvite(inv));
      b.setAttribute("aria-label", `Revoke the link made ${dayFormat.format(new Date(inv.createdAt))}, used ${inv.uses} of ${inv.maxUses}`);
      li.append(b);
    }
    return li;
  });
  if (items.length === 0) items.push(emptyItem("No invite links yet: make one above."));
  $("invite-list").replaceChildren(...items);
}

$("invite-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const conv = open;
  $("invite-error").textContent = "";
  $("invite-status").textContent = "";
  try {
    const { createInvite } = await api.gql(queries.createInvite, {
      r: conv.name,
      n: Number($("invite-uses").value),
      s: Number($("invite-expiry").value),
    });
    if (open !== conv) return;
    $("invite-link").value = `${location.origin}${location.pathname}#join/${encodeURIComponent(createInvite.token)}`;
    $("invite-new").hidden = false;
    $("invite-link").select();
    $("invite-status").textContent = "Link made. It is shown only now: copy it.";
    loadInvites();
  } catch (err) {
    $("invite-error").textContent = err.message;
  }
});

$("invite-copy").addEventListener("click", async () => {
  const link = $("invite-link");
  try {
    await navigator.clipboard.writeText(link.value);
    $("invite-status").textContent = "Link copied.";
  } catch {
    link.select();
    $("invite-status").textContent = "The browser did not let the app copy: the link is selected, copy it with Ctrl+C (⌘C).";
  }
});

async function revokeInvite(inv) {
  if (!confirm("Revoke this invite link? Nobody can join with it any more.")) return;
  const conv = open;
  $("invite-error").textContent = "";
  try {
    await api.gql(queries.revokeInvite, { r: conv.name, id: inv.id });
    if (open !== conv) return;
    $("invite-status").textContent = "Link revoked.";
    loadInvites();
  } catch (err) {
    $("invite-error").textContent = err.message;
  }
}

// joinByLink joins the group of an invite link's token, then opens it; a
// link that lets nobody in says why, in words.
let joining = null; // the token being used
async function joinByLink(token) {
  if (joining === token) return;
  joining = token;
  closeConversation();
  document.querySelector(".chat").classList.add("in-conversation");
  $("conversation-title").textContent = "Invite link";
  $("join-status").hidden = false;
  renderEmpty();
  $("join-text").textContent = "Joining the group…";
  try {
    const { joinByInvite: room } = await api.gql(queries.joinByInvite, { t: token });
    if (!location.hash.startsWith("#join/")) return; // the user went elsewhere meanwhile
    loadInbox();
    loadRooms();
    history.replaceState(null, "", `#room/${encodeURIComponent(room.name)}`);
    openFromHash();
  } catch (err) {
    if (open || !location.hash.startsWith("#join/")) return;
    $("join-text").textContent = "";
    $("join-error").textContent = joinErrorText(err);
    $("join-hint").hidden = false;
  } finally {
    joining = null;
  }
}

// joinErrorText says why an invite link let nobody in.
function joinErrorText(err) {
  const said = err.message.replace(/^[^:]*forbidden: /i, "");
  if (err.code === "NOT_FOUND") return "This invite link does not work: it was revoked, or its group no longer exists.";
  if (err.code !== "FORBIDDEN") return err.message;
  if (/expired/.test(said)) return "This invite link has expired.";
  if (/used as often/.test(said)) return "This invite link has been used as many times as it allows.";
  if (/banned/.test(said)) return "You are banned from this group: its invite links cannot add you.";
  if (/block/.test(said)) return "This invite link cannot add you: you or its maker blocked the other.";
  return `This invite link cannot add you: ${said}`;
}

// ---- A message's thread ----

// thread is the open thread: { root, after (the cursor of its older replies),
// hasOlder, shown: reply id -> li, pending (the reply being sent and its
// clientMessageId, kept until acknowledged as the composer's is) }.
let thread = null;

async function openThread(root) {
  closeThread();
  const t = { root, after: null, hasOlder: false, shown: new Map(), pending: null };
  thread = t;
  $("thread-root").replaceChildren(renderThreadItem(root, "div"));
  $("thread-messages").replaceChildren();
  $("thread-error").textContent = "";
  $("thread").hidden = false;
  document.querySelector(".chat").classList.add("with-thread");
  await loadThreadPage();
  if (thread === t) $("thread-input").focus();
}

function closeThread() {
  const wasOpen = thread;
  thread = null;
  $("thread").hidden = true;
  document.querySelector(".chat").classList.remove("with-thread");
  $("thread-messages").replaceChildren();
  $("thread-root").replaceChildren();
  $("thread-input").value = "";
  // Back to the message whose thread it was.
  if (wasOpen) shown.get(wasOpen.root.id)?.li.querySelector(".thread-link")?.focus();
}

// loadThreadPage reads the next older page of the thread's replies.
async function loadThreadPage() {
  const t = thread;
  try {
    const data = (await api.gql(queries.thread, { id: t.root.id, first: pageSize, after: t.after })).thread;
    if (thread !== t) return;
    t.after = data.pageInfo.endCursor;
    t.hasOlder = data.pageInfo.hasNextPage;
    $("thread-older").hidden = !t.hasOlder;
    // Newest first from the server; oldest at the top here.
    const items = [];
    for (const { node } of data.edges.slice().reverse()) if (!t.shown.has(node.id)) items.push(threadItem(node));
    $("thread-messages").prepend(...items);
  } catch (err) {
    if (thread === t) $("thread-error").textContent = err.message;
  }
}
$("thread-older").addEventListener("click", loadThreadPage);
$("thread-close").addEventListener("click", closeThread);
$("thread").addEventListener("keydown", (e) => {
  if (e.key === "Escape") closeThread();
});

function threadItem(message) {
  const li = renderThreadItem(message);
  thread.shown.set(message.id, li);
  return li;
}

// showInThread adds a new reply to the open thread, or updates one shown
// there (an edit, a deletion), or its root.
function showInThread(message, posted) {
  if (!thread) return;
  if (message.id === thread.root.id) {
    thread.root = message;
    $("thread-root").replaceChildren(renderThreadItem(message, "div"));
    return;
  }
  const known = thread.shown.get(message.id);
  if (known) {
    known.replaceWith(threadItem(message));
  } else if (posted && message.replyToId === thread.root.id) {
    const list = $("thread-messages");
    list.append(threadItem(message));
    list.lastElementChild.scrollIntoView({ block: "nearest" });
  }
}

// renderThreadItem shows a message of a thread: its author, time and text.
function renderThreadItem(message, element = "li") {
  const li = document.createElement(element);
  li.className = `message${message.deleted ? " deleted" : ""}`;
  li.dataset.id = message.id;
  const body = document.createElement("div");
  body.className = "body";
  const meta = document.createElement("div");
  meta.className = "meta";
  const author = document.createElement("strong");
  author.textContent = message.author.login;
  const time = document.createElement("time");
  time.dateTime = message.postedAt;
  const posted = new Date(message.postedAt);
  time.textContent = (posted.toDateString() === new Date().toDateString() ? timeFormat : dayFormat).format(posted);
  meta.append(author, " ", time);
  if (message.editedAt) meta.append(" ", tag("(edited)"));
  const content = document.createElement("p");
  content.className = "content";
  const isBlocked = message.author.login !== api.currentUser().login && blocked.has(message.author.login);
  content.textContent = message.deleted
    ? "This message was deleted."
    : message.hidden && !message.content
      ? "This message was hidden."
      : isBlocked
        ? `A message from ${message.author.login}, whom you blocked.`
        : message.content || filesText(message.attachments);
  body.append(meta, content);
  li.append(avatar(isBlocked ? { ...message.author, avatar: null } : message.author), body);
  return li;
}

$("thread-input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("thread-composer").requestSubmit();
  }
});

let threadSending = false;
$("thread-composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const t = thread;
  const content = $("thread-input").value.trim();
  if (!t || !open || !content || threadSending) return;
  $("thread-error").textContent = "";
  // As the composer's: the reply keeps its name until the server answers.
  const key = JSON.stringify([open.id, t.root.id, content]);
  if (t.pending?.key !== key) t.pending = { key, id: crypto.randomUUID() };
  const vars = { content, id: t.pending.id, replyTo: t.root.id, attachments: null };
  threadSending = true;
  try {
    const sent =
      open.kind === "room"
        ? (await api.gql(queries.post, { room: open.name, ...vars })).postMessage
        : (await api.gql(queries.sendDirect, { to: open.peer, ...vars })).sendDirectMessage;
    t.pending = null;
    if (thread === t) $("thread-input").value = "";
    show(sent, true);
  } catch (err) {
    if (thread === t) $("thread-error").textContent = err.message;
  } finally {
    threadSending = false;
  }
});

// ---- Typing and presence ----

// postedAt holds when each user's last post was shown: typing notices and
// posts travel apart, so a TYPING_STARTED sent before a post can arrive
// after it, and is ignored for a moment.
const postedAt = new Map(); // login -> Date.now()

function setTyping(login, active) {
  if (login === api.currentUser().login) return;
  if (active && Date.now() - (postedAt.get(login) ?? 0) < 1500) return;
  clearTimeout(typists.get(login));
  typists.delete(login);
  // The server sends TYPING_STOPPED; time out too, in case its sender died.
  if (active) typists.set(login, setTimeout(() => setTyping(login, false), 7000));
  const names = [...typists.keys()];
  $("typing").textContent = names.length === 0 ? "" : `${names.join(", ")} ${names.length === 1 ? "is" : "are"} typing…`;
}

let online = new Set();
async function refreshPresence() {
  const conv = open;
  try {
    if (conv.kind === "room") {
      const { room } = await api.gql(queries.room, { name: conv.name });
      if (open !== conv || !room) return;
      online = new Set((room.online ?? []).map((u) => u.login));
      conv.banner = room.banner;
      conv.icon = room.icon;
      renderConversationIcon();
      conv.group = room.kind === "PRIVATE_GROUP";
      const moderates = room.creator.login === api.currentUser().login || room.moderators.some((m) => m.login === api.currentUser().login);
      const changed = moderates !== conv.moderates || room.creator.login !== conv.creator;
      conv.creator = room.creator.login;
      conv.moderators = room.moderators.map((m) => m.login);
      conv.moderates = moderates;
      const participants = (conv.participants ?? []).join();
      conv.participants = room.participants.map((u) => u.login);
      if (changed || (conv.group && participants !== conv.participants.join())) rerenderShown();
      $("member-form").hidden = !conv.group;
      renderInvitesButton();
      renderPins();
    } else {
      const { presence } = await api.gql(queries.presence, { logins: [conv.peer] });
      if (open !== conv) return;
      online = new Set(presence.filter((p) => p.online).map((p) => p.login));
    }
    renderInfo();
  } catch {
    /* presence is a nicety */
  }
}

function setOnline(login, isOnline) {
  if (isOnline) online.add(login);
  else online.delete(login);
  renderInfo();
}

function renderInfo() {
  if (!open) return;
  const who = [...online].sort();
  if (open.kind === "dm") {
    $("conversation-info").textContent = online.has(open.peer) ? "online" : "offline";
    return;
  }
  const parts = [];
  if (open.banner) parts.push(open.banner);
  if (open.participants) parts.push(`${open.participants.length} participant${open.participants.length === 1 ? "" : "s"}`);
  parts.push(`online: ${who.length ? who.join(", ") : "nobody"}`);
  $("conversation-info").textContent = parts.join(" · ");
}

// ---- The composer ----

const input = $("composer-input");

function setComposerMode(mode) {
  replyTo = mode?.replyTo ?? null;
  editing = mode?.edit ?? null;
  const bar = $("composer-mode");
  bar.hidden = !mode;
  if (replyTo) bar.firstElementChild.textContent = `Replying to ${replyTo.author.login}: ${(replyTo.content || filesText(replyTo.attachments)).slice(0, 60)}`;
  if (editing) {
    bar.firstElementChild.textContent = "Editing your message";
    input.value = editing.content;
  }
  if (mode) input.focus();
}
$("composer-cancel").addEventListener("click", () => {
  if (editing) input.value = "";
  setComposerMode(null);
});

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  } else if (e.key === "Escape" && (editing || replyTo)) {
    if (editing) input.value = "";
    setComposerMode(null);
  } else if (e.key === "ArrowUp" && input.value === "") {
    // Up in an empty box edits your last message.
    const own = [...shown.values()].filter((s) => s.message.author.login === api.currentUser().login && !s.message.system && !s.message.deleted);
    if (own.length) {
      e.preventDefault();
      setComposerMode({ edit: own[own.length - 1].message });
    }
  }
});

let typingSent = 0;
input.addEventListener("input", () => {
  if (!open || editing) return;
  const now = Date.now();
  if (input.value === "") {
    if (typingSent) api.gql(queries.typing, { c: open.id, active: false }).catch(() => {});
    typingSent = 0;
  } else if (now - typingSent > 3000) {
    typingSent = now; // renew every 3 seconds while typing
    api.gql(queries.typing, { c: open.id }).catch(() => {});
  }
});

// The message being sent and its name (clientMessageId), kept until the
// server acknowledges it: pressing send again after an answer was lost (a
// timeout, the network gone) sends the same name, and the server stores
// the message once. Another text, reply or conversation is another
// message, with a name of its own.
let pendingSend = null;

let sending = false;

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const content = input.value.trim();
  if (!open || sending) return;
  if (editing ? !content : !content && files.length === 0) return;
  showConversationError(null);
  const conv = open;
  sending = true;
  try {
    if (editing) {
      show((await api.gql(queries.edit, { id: editing.id, content })).editMessage, false);
    } else {
      // The files first: the message goes once they are all uploaded and checked.
      const batch = [...files];
      $("composer").setAttribute("aria-busy", "true");
      await Promise.all(batch.map((f) => f.done));
      const failed = batch.find((f) => f.state === "failed");
      if (failed) {
        showConversationError(new Error(`${failed.error} Remove it or try again before sending.`));
        return;
      }
      if (open !== conv) return;
      const attachments = batch.map((f) => f.attachment.id);
      const key = JSON.stringify([open.id, replyTo?.id ?? null, content, attachments]);
      if (pendingSend?.key !== key) pendingSend = { key, id: crypto.randomUUID(), tries: 0 };
      const vars = { content, id: pendingSend.id, replyTo: replyTo?.id ?? null, attachments: attachments.length ? attachments : null };
      let sent = null;
      try {
        pendingSend.tries++;
        sent =
          open.kind === "room"
            ? (await api.gql(queries.post, { room: open.name, ...vars })).postMessage
            : (await api.gql(queries.sendDirect, { to: open.peer, ...vars })).sendDirectMessage;
      } catch (err) {
        // A retry whose files the server says were sent already: the try
        // whose answer was lost posted them (the server checks the files
        // before the message's name). The message is there: read it.
        if (!(err.code === "CONFLICT" && attachments.length && pendingSend.tries > 1)) throw err;
        refreshNewest();
      }
      pendingSend = null;
      for (const f of batch) removeFile(f);
      if (sent) show(sent, true);
      if (open.kind === "dm") loadInboxSoon();
    }
    typingSent = 0;
    input.value = "";
    setComposerMode(null);
  } catch (err) {
    showConversationError(err.code === "QUOTA_EXCEEDED" || err.code === "RATE_LIMITED" || err.code === "UNAVAILABLE" ? new Error(fileErrorText(null, err)) : err);
  } finally {
    sending = false;
    $("composer").removeAttribute("aria-busy");
  }
});

// ---- Files to send ----

// files are the files the next message carries, in the order chosen: each
// { file, state: "uploading" | "ready" | "failed", progress (0 to 1),
// upload (createUpload's answer), attachment (completeUpload's), error (in
// words), done (a promise that settles when its upload ends), chip (its
// element) }. A file uploads as soon as it is chosen, and is checked
// (completeUpload) so that a bad file is told before the message is sent.
let files = [];
let maxFileBytes = null; // the largest file the server takes, read once

function addFiles(list) {
  if (!open || $("composer").hidden) return;
  const chosen = [...list];
  if (chosen.length === 0) return;
  showConversationError(null);
  const room = maxFiles - files.length;
  if (chosen.length > room) {
    showConversationError(new Error(`A message carries at most ${maxFiles} files${room > 0 ? `: the first ${room} were added` : ""}.`));
  }
  for (const file of chosen.slice(0, Math.max(0, room))) {
    const f = { file, state: "uploading", progress: 0, upload: null, attachment: null, error: "", done: null, chip: null, gone: false };
    files.push(f);
    startUpload(f);
  }
  renderFiles();
}

function startUpload(f) {
  f.state = "uploading";
  f.progress = 0;
  f.error = "";
  f.done = uploadFile(f).then(
    (attachment) => {
      f.attachment = attachment;
      f.state = "ready";
    },
    (err) => {
      f.state = "failed";
      f.error = fileErrorText(f.file, err);
      // The server removed a refused file, and sweeps unsent ones after a
      // day: a retry sends it again.
      if (err.code === "BAD_USER_INPUT" || err.code === "NOT_FOUND") f.sent = false;
    },
  ).finally(() => {
    if (!f.gone) renderFile(f);
  });
}

// uploadFile sends one file: createUpload, its bytes with the request given,
// then completeUpload, which checks them. A retry after the bytes were sent
// only checks them again.
async function uploadFile(f) {
  const { file } = f;
  if (file.size === 0) throw new FileError(`${file.name} is empty.`);
  if (maxFileBytes === null) {
    maxFileBytes = await api.gql(queries.fileQuota).then((d) => d.fileQuota.maxFileBytes, () => null);
  }
  if (maxFileBytes !== null && file.size > maxFileBytes) throw new FileError(`${file.name} is too large: files are at most ${humanSize(maxFileBytes)}.`);
  if (!f.sent) {
    const { createUpload: upload } = await api.gql(queries.createUpload, { name: file.name, type: file.type || "application/octet-stream", size: file.size });
    if (f.gone) return null;
    f.upload = upload;
    await put(f, upload);
    f.sent = true;
  }
  if (f.gone) return null;
  return (await api.gql(queries.completeUpload, { id: f.upload.id })).completeUpload;
}

// The headers a page may not set: the browser sets them (Content-Length from the body).
const browserHeaders = new Set(["content-length", "host", "connection", "expect", "transfer-encoding"]);

// put sends a file's bytes with the upload's request, as given, reporting its progress.
function put(f, upload) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(upload.method, upload.url);
    for (const h of upload.headers) if (!browserHeaders.has(h.name.toLowerCase())) xhr.setRequestHeader(h.name, h.value);
    xhr.upload.addEventListener("progress", (e) => {
      if (!e.lengthComputable || f.gone) return;
      f.progress = e.loaded / e.total;
      const bar = f.chip?.querySelector("progress");
      if (bar) bar.value = f.progress;
    });
    xhr.addEventListener("load", () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else reject(new FileError(xhr.status === 403 ? `The upload of ${f.file.name} was refused (its link expired). Try again.` : `The upload of ${f.file.name} failed (HTTP ${xhr.status}). Try again.`));
    });
    xhr.addEventListener("error", () => reject(new api.NetworkError()));
    xhr.addEventListener("abort", () => reject(new FileError(`The upload of ${f.file.name} was stopped.`)));
    f.xhr = xhr;
    xhr.send(f.file);
  });
}

/** An error of a file, already in words. */
class FileError extends Error {}

// fileErrorText says what went wrong with a file (file null: with the
// message's files), in words rather than the API's codes.
function fileErrorText(file, err) {
  const name = file?.name ?? "A file";
  const wait = err.errors?.[0]?.extensions?.retryAfter;
  const later = wait ? `Try again in ${Math.max(1, Math.ceil(wait))} seconds.` : "Try again in a moment.";
  switch (err.code) {
    case "BAD_USER_INPUT":
      return file && /^image\//.test(file.type) ? `${name} is not a valid image.` : `${name} was refused: ${err.message}`;
    case "QUOTA_EXCEEDED":
      return file ? `You have used your file quota: ${name} does not fit. Delete messages with files to make room.` : "You have used your file quota.";
    case "RATE_LIMITED":
      return `You are sending files too fast. ${later}`;
    case "NOT_FOUND":
      return `${name} is no longer on the server (files not sent go after a day). Retry to upload it again.`;
    case "UNAVAILABLE":
      return `Files cannot be uploaded right now. ${later}`;
    default:
      return err.message;
  }
}

function removeFile(f) {
  f.gone = true;
  if (f.state === "uploading") f.xhr?.abort();
  files = files.filter((x) => x !== f);
  renderFiles();
}

function clearFiles() {
  for (const f of [...files]) removeFile(f);
}

function renderFiles() {
  const list = $("composer-files");
  list.hidden = files.length === 0;
  list.replaceChildren(...files.map((f) => (f.chip = renderFile(f, false))));
}

// renderFile draws a file's chip: its name and size, its state (a progress
// bar while it uploads, what went wrong), and its buttons.
function renderFile(f, replace = true) {
  const li = document.createElement("li");
  li.className = `chip ${f.state}`;
  const name = document.createElement("span");
  name.className = "name";
  name.textContent = `${f.file.name} · ${humanSize(f.file.size)}`;
  li.append(name);
  if (f.state === "uploading") {
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = f.progress;
    bar.setAttribute("aria-label", `Uploading ${f.file.name}`);
    li.append(bar);
  } else if (f.state === "ready") {
    li.append(tag("ready"));
  } else {
    const error = document.createElement("span");
    error.className = "error";
    error.setAttribute("role", "alert");
    error.textContent = f.error;
    const retry = button("Retry", () => {
      startUpload(f);
      renderFile(f);
    });
    retry.setAttribute("aria-label", `Retry ${f.file.name}`);
    li.append(error, retry);
  }
  const remove = button("✕", () => {
    removeFile(f);
    input.focus();
  });
  remove.setAttribute("aria-label", `Remove ${f.file.name}`);
  li.append(remove);
  if (replace && f.chip?.isConnected) {
    // Keep the keyboard where it was: on the same button of the new chip.
    const focused = f.chip.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    f.chip.replaceWith(li);
    if (focused) [...li.querySelectorAll("button")].find((b) => b.getAttribute("aria-label") === focused)?.focus();
    if (focused && !li.contains(document.activeElement)) li.querySelector("button")?.focus();
  }
  if (replace) f.chip = li;
  return li;
}

$("attach").addEventListener("click", () => $("file-input").click());
$("file-input").addEventListener("change", (e) => {
  addFiles(e.target.files);
  e.target.value = ""; // the same file may be picked again
});
// Images pasted into the message box (a screenshot, a copied image).
input.addEventListener("paste", (e) => {
  const pasted = [...(e.clipboardData?.files ?? [])];
  if (pasted.length === 0) return;
  e.preventDefault();
  addFiles(pasted);
});
// Files dropped on the conversation.
const conversation = document.querySelector("main.conversation");
const carriesFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes("Files");
conversation.addEventListener("dragover", (e) => {
  if (!carriesFiles(e) || $("composer").hidden) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = "copy";
  conversation.classList.add("dropping");
});
conversation.addEventListener("dragleave", (e) => {
  if (!conversation.contains(e.relatedTarget)) conversation.classList.remove("dropping");
});
conversation.addEventListener("drop", (e) => {
  conversation.classList.remove("dropping");
  if (!carriesFiles(e)) return;
  e.preventDefault();
  addFiles(e.dataTransfer.files);
});

// ---- Start ----

showSignedIn(api.currentUser());

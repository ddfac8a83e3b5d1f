// The app's whole use of the API: GraphQL over HTTP with the access token,
// the session (login, refresh before expiry, logout), and live subscriptions
// over one websocket with the official graphql-ws client, resumed from the
// last cursor after any disconnect.

const endpoint = "/query";
const stored = "chatql.session"; // sessionStorage: one session per tab

/** An error the API answered with; code is its extensions.code. */
export class APIError extends Error {
  constructor(errors) {
    super(errors.map((e) => e.message).join("; "));
    this.code = errors[0]?.extensions?.code;
    this.errors = errors;
  }
}

/** No answer came (offline, or the server unreachable): the session stands. */
export class NetworkError extends Error {
  constructor() {
    super(navigator.onLine ? "The server did not answer. Try again in a moment." : "You are offline. Try again once you are back online.");
    this.code = "NETWORK";
  }
}

const authFields = "token expiresAt refreshToken refreshExpiresAt user { login firstname lastname }";

// The session: the tokens from login or refreshToken, kept in sessionStorage
// so a reload keeps the user logged in, and refreshed a minute before the
// access token expires (or halfway, for short-lived tokens).
let session = JSON.parse(sessionStorage.getItem(stored) || "null");
let refreshing = null;
let refreshTimer = 0;
const sessionListeners = new Set();

export function currentUser() {
  return session?.user ?? null;
}

/** Calls fn(user) when the user logs in or out (user null). */
export function onSession(fn) {
  sessionListeners.add(fn);
}

function setSession(payload) {
  session = payload;
  if (payload) sessionStorage.setItem(stored, JSON.stringify(payload));
  else sessionStorage.removeItem(stored);
  scheduleRefresh();
  for (const fn of sessionListeners) fn(currentUser());
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  if (!session) return;
  const left = Date.parse(session.expiresAt) - Date.now();
  refreshTimer = setTimeout(() => refresh().catch(() => {}), Math.max(1000, left - 60_000, left / 2));
}
scheduleRefresh(); // a session kept across a reload

// Tabs that share a session: a tab opened from the app (a link opened in a
// new tab, a duplicated tab) starts with a copy of its sessionStorage, so
// with the same refresh token, which works once: the second tab to use it
// would end the session for both. So tabs refresh one at a time (a Web
// Lock), and a tab that exchanges a refresh token notes the new pair under
// the spent token (localStorage, for a few minutes) and tells the open tabs
// (a BroadcastChannel); a tab about to spend that token takes the new pair
// instead. The note is encrypted with a key derived from the spent token,
// which only the tabs holding it know: once they are closed, no one can
// read the live token it keeps.
const rotations = "chatql.rotations"; // localStorage: [{ id, iv, pair, at }], newest last
const rotationLife = 5 * 60_000;
const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("chatql.session") : null;
const bytes = (text) => new TextEncoder().encode(text);
const base64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)));
const unbase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

// noteKey derives, from a spent refresh token, its note's id and the key
// that encrypts the pair it was exchanged for.
async function noteKey(spent) {
  const id = base64(await crypto.subtle.digest("SHA-256", bytes(`chatql note id ${spent}`)));
  const raw = await crypto.subtle.digest("SHA-256", bytes(`chatql note key ${spent}`));
  return { id, key: await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]) };
}

function notesKept() {
  try {
    const list = JSON.parse(localStorage.getItem(rotations) || "[]");
    return Array.isArray(list) ? list.filter((n) => Date.now() - n.at < rotationLife) : [];
  } catch {
    return [];
  }
}

// rotated notes that spent was exchanged for next, for the other tabs.
async function rotated(spent, next) {
  tabs?.postMessage({ spent, session: next });
  try {
    const { id, key } = await noteKey(spent);
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const pair = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, bytes(JSON.stringify(next)));
    localStorage.setItem(rotations, JSON.stringify([...notesKept(), { id, iv: base64(iv), pair: base64(pair), at: Date.now() }].slice(-8)));
  } catch {
    /* no storage or no crypto here: the broadcast told the open tabs */
  }
}

// successorOf is the pair another tab got for spent, if one did.
async function successorOf(spent) {
  try {
    const { id, key } = await noteKey(spent);
    const note = notesKept().find((n) => n.id === id);
    if (!note) return null;
    const pair = await crypto.subtle.decrypt({ name: "AES-GCM", iv: unbase64(note.iv) }, key, unbase64(note.pair));
    return JSON.parse(new TextDecoder().decode(pair));
  } catch {
    return null;
  }
}

tabs?.addEventListener("message", ({ data }) => {
  if (session && data?.spent === session.refreshToken) setSession(data.session);
});

// withRefreshLock runs fn holding the tabs' refresh lock (at once where the
// browser has no Web Locks).
function withRefreshLock(fn) {
  return navigator.locks ? navigator.locks.request("chatql.refresh", fn) : fn();
}

/** Exchanges the refresh token for a new pair; ends the session if it fails. */
export function refresh() {
  if (!session) return Promise.reject(new Error("not logged in"));
  // One refresh at a time, in this tab and across tabs: a refresh token works once.
  refreshing ??= withRefreshLock(async () => {
    if (!session) throw new Error("not logged in");
    const spent = session.refreshToken;
    const taken = await successorOf(spent);
    if (taken) {
      setSession(taken); // another tab exchanged it meanwhile: its pair is ours
      return;
    }
    // The refresh's name, kept with the session before it is sent: if the
    // answer is lost (the page reloaded, the network dropped), the next try
    // sends the same token and name, and the server answers with the same
    // pair instead of ending the session as a reuse.
    if (!session.refreshId) {
      session.refreshId = crypto.randomUUID();
      sessionStorage.setItem(stored, JSON.stringify(session));
    }
    try {
      const d = await post(
        `mutation Refresh($t: String!, $id: String) { refreshToken(token: $t, clientRefreshId: $id) { ${authFields} } }`,
        { t: spent, id: session.refreshId },
        null,
      );
      // Kept before anything else: the old token is spent now.
      setSession(d.refreshToken);
      await rotated(spent, d.refreshToken);
    } catch (err) {
      // Used up, revoked or expired: log in again, unless another tab's
      // pair has replaced the one used meanwhile. An outage (no answer, a
      // 502, RATE_LIMITED) keeps the session, to try again later.
      if (err.code === "UNAUTHENTICATED" && session?.refreshToken === spent) setSession(null);
      throw err;
    }
  }).finally(() => (refreshing = null));
  return refreshing;
}

/** The access token, refreshed first if it expires within 5 seconds. */
export async function token() {
  if (!session) return null;
  if (Date.parse(session.expiresAt) - Date.now() < 5000) await refresh();
  return session?.token ?? null;
}

async function post(query, variables, bearer) {
  const headers = { "Content-Type": "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let resp;
  try {
    resp = await fetch(endpoint, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  } catch {
    throw new NetworkError(); // fetch rejects only when no answer came
  }
  const body = await resp.json().catch(() => ({ errors: [{ message: `The server answered HTTP ${resp.status}. Try again in a moment.` }] }));
  if (body.errors?.length) throw new APIError(body.errors);
  return body.data;
}

/** Runs a query or mutation as the logged-in user; retries once after a refresh if the token was refused. */
export async function gql(query, variables = {}) {
  try {
    return await post(query, variables, await token());
  } catch (err) {
    if (err.code !== "UNAUTHENTICATED" || !session) throw err;
    await refresh();
    return post(query, variables, session.token);
  }
}

export async function signup(input) {
  await post("mutation Signup($i: SignupInput!) { signup(input: $i) { login } }", { i: input }, null);
  return login(input.login, input.password);
}

export async function login(login, password) {
  const d = await post(`mutation Login($l: String!, $p: String!) { login(login: $l, password: $p) { ${authFields} } }`, { l: login, p: password }, null);
  setSession(d.login);
  return d.login.user;
}

/** Starts the session of an AuthPayload (authFields) that a sign-in other than login answered, such as single sign-on. */
export function startSession(payload) {
  setSession(payload);
  return payload.user;
}

export async function logout() {
  try {
    await gql("mutation { logout }");
  } finally {
    connection.close();
    setSession(null);
  }
}

// Live subscriptions. All share one websocket (graphql-transport-ws). The
// client itself does not retry: when the socket closes for any reason (the
// network went, the server restarted, the access token expired: 4401), every
// subscription is started again on a new socket, with a fresh token, and with
// `after` set to the cursor of the last event (or sync page) it saw, so the
// server replays what was missed: nothing lost, nothing twice.
class Connection {
  constructor() {
    this.client = null;
    this.subs = new Set();
    this.retryTimer = 0;
    this.delay = 0;
    this.listeners = new Set();
    this.state = "idle";
    addEventListener("offline", () => this.drop());
    addEventListener("online", () => this.restart());
  }

  /** Calls fn(state) when the connection's state changes: "connecting", "live", "offline". */
  onState(fn) {
    this.listeners.add(fn);
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    for (const fn of this.listeners) fn(state);
  }

  ensureClient() {
    if (this.client) return this.client;
    const { createClient } = window.graphqlWs;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.setState("connecting");
    const client = createClient({
      url: `${scheme}//${location.host}${endpoint}`,
      lazy: true,
      retryAttempts: 0, // we resubscribe ourselves, from the last cursors
      keepAlive: 10_000, // pings show a dead network sooner
      connectionParams: async () => ({ token: await token() }),
      on: {
        connected: () => {
          this.delay = 0;
          this.setState("live");
        },
        closed: (event) => {
          if (this.client === client) this.drop(event);
        },
      },
    });
    this.client = client;
    return client;
  }

  /**
   * Ends the socket; its subscriptions wait to be started again. A close
   * with 4401 means the access token expired or was refused: refresh it
   * first (a failed refresh ends the session).
   */
  drop(event) {
    const client = this.client;
    this.client = null;
    for (const sub of this.subs) sub.stop();
    client?.terminate();
    this.setState(navigator.onLine ? "connecting" : "offline");
    if (event?.code === 4401 && session) {
      // A refresh that got no answer keeps the session: the socket is
      // started again later all the same, as after any outage (a failed
      // one ends the session, and nothing is started).
      refresh()
        .catch(() => {})
        .then(() => this.schedule());
    } else {
      this.schedule();
    }
  }

  schedule() {
    clearTimeout(this.retryTimer);
    if (!navigator.onLine || !session || this.subs.size === 0) return;
    this.retryTimer = setTimeout(() => this.restart(), this.delay);
    this.delay = Math.min(10_000, this.delay * 2 || 500);
  }

  restart() {
    clearTimeout(this.retryTimer);
    if (!navigator.onLine || !session) return;
    for (const sub of this.subs) if (!sub.running) sub.start();
  }

  close() {
    for (const sub of [...this.subs]) sub.cancel();
    this.client?.dispose();
    this.client = null;
    this.setState("idle");
  }
}

const connection = new Connection();
export const connectionState = (fn) => connection.onState(fn);

/**
 * Subscribes to query (sync, roomEvents or inboxEvents) and keeps it running.
 * variables(cursor) gives the variables for a start after cursor (null at
 * first); onEvent gets each event; onError gets a GraphQL error the server
 * refused the subscription with (it is not started again). Returns a
 * handle whose cancel() ends it, and whose ended is true once the server
 * ended or refused it. onEnd is told when the server ends it.
 */
export function subscribe(query, variables, field, onEvent, onError, cursor = null, onEnd = null) {
  const sub = {
    running: false,
    ended: false,
    dispose: null,
    start() {
      this.running = true;
      const client = connection.ensureClient();
      const run = {}; // this start; callbacks of an earlier one are ignored
      this.run = run;
      this.dispose = client.subscribe(
        { query, variables: variables(cursor) },
        {
          next: (result) => {
            if (this.run !== run || result.errors?.length) return;
            const event = result.data[field];
            if (event.cursor) cursor = event.cursor;
            onEvent(event);
          },
          error: (err) => {
            if (this.run !== run) return;
            this.running = false;
            if (Array.isArray(err) && err[0]?.extensions?.code !== "UNAUTHENTICATED") {
              // Refused by the server (not a participant, no such room...).
              this.ended = true;
              connection.subs.delete(this);
              onError?.(new APIError(err));
            } else if (connection.client === client) {
              // The socket closed, or the access token it was opened with
              // expired: the server then closes the socket with 4401, which
              // graphql-ws reports to each operation, and sends no error of
              // the operation's own (an UNAUTHENTICATED one is taken the same
              // way). Either way, start again from the cursor (after a
              // refresh, for a token: a session that ended fails it, and
              // logs out).
              connection.drop(Array.isArray(err) ? { code: 4401 } : err);
            } else {
              connection.schedule(); // already dropped: started again with the others
            }
          },
          complete: () => {
            if (this.run !== run) return;
            // The server ended the stream (the room was deleted, or we left).
            this.running = false;
            this.ended = true;
            connection.subs.delete(this);
            onEnd?.();
          },
        },
      );
    },
    stop() {
      this.running = false;
      this.run = null;
      const d = this.dispose;
      this.dispose = null;
      try {
        d?.();
      } catch {
        /* the socket is gone already */
      }
    },
    cancel() {
      connection.subs.delete(this);
      this.stop();
    },
  };
  connection.subs.add(sub);
  if (navigator.onLine) sub.start();
  return sub;
}

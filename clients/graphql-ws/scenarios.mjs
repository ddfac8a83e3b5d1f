// Runs the official websocket clients against a chatql server and prints
// what they saw as one JSON object: the graphql-ws library (subprotocol
// graphql-transport-ws) and the legacy subscriptions-transport-ws (graphql-ws).
// e2e/websocket_test.go starts the server, prepares users and rooms, runs
//
//   node clients/graphql-ws/scenarios.mjs '<json config>'
//
// and checks the output. The config names the endpoints (ws, http), two
// tokens (member: creator of the rooms; outsider: a member of none), and per
// protocol a room, the id of a message (after) and of the one posted after it
// (replayed).
import { createClient } from 'graphql-ws';
import { SubscriptionClient } from 'subscriptions-transport-ws';
import WebSocket from 'ws';

const cfg = JSON.parse(process.argv[2]);

const roomEvents = `subscription($r: String!, $after: String) {
  roomEvents(room: $r, after: $after) { kind cursor message { id content } }
}`;

// within fails a scenario that has not settled in time, so that a server
// that never answers shows up as a result rather than a hung test.
function within(ms, promise) {
  return Promise.race([
    promise,
    new Promise((resolve) => setTimeout(() => resolve({ timeout: true }), ms)),
  ]);
}

async function post(token, query, variables) {
  const resp = await fetch(cfg.http, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await resp.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

// follow reads a room from `after`: the replayed message first, then one
// posted live, then the room's deletion, which must complete the stream.
// subscribe(sink) starts the subscription with the client under test.
function follow(room, subscribe) {
  return new Promise((resolve) => {
    const seen = { events: [], completed: false };
    const live = `live in ${room.name}`;
    subscribe({
      next: async (result) => {
        if (result.errors) {
          seen.nextErrors = result.errors;
          return;
        }
        const ev = result.data.roomEvents;
        seen.events.push({ kind: ev.kind, id: ev.message?.id ?? null, content: ev.message?.content ?? null });
        try {
          if (ev.message?.id === room.replayed) {
            await post(cfg.member, 'mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }', { r: room.name, c: live });
          } else if (ev.message?.content === live) {
            await post(cfg.member, 'mutation($r: String!) { deleteRoom(room: $r) { name } }', { r: room.name });
          }
        } catch (err) {
          seen.postError = String(err);
          resolve(seen);
        }
      },
      error: (err) => {
        seen.error = describe(err);
        resolve(seen);
      },
      complete: () => {
        seen.completed = true;
        resolve(seen);
      },
    });
  });
}

// describe turns what an error sink received into plain JSON: a close
// event, a list of GraphQL errors, one GraphQL error, or an Error.
function describe(err) {
  if (Array.isArray(err)) return { graphqlErrors: err.map((e) => ({ message: e.message, code: e.extensions?.code ?? null })) };
  if (err && typeof err.code === 'number') return { closeCode: err.code, closeReason: err.reason };
  if (err && err.message !== undefined && !(err instanceof Error)) return { graphqlErrors: [{ message: err.message, code: err.extensions?.code ?? null }] };
  return { other: String(err) };
}

// once runs one operation to its end and reports how it ended.
function once(subscribe) {
  return new Promise((resolve) => {
    const seen = { results: [] };
    subscribe({
      next: (result) => seen.results.push(result),
      error: (err) => resolve({ ...seen, error: describe(err) }),
      complete: () => resolve({ ...seen, completed: true }),
    });
  });
}

// graphqlWS runs the scenarios with the graphql-ws library.
async function graphqlWS() {
  const out = {};
  const connect = (token, extra = {}) =>
    createClient({ url: cfg.ws, webSocketImpl: WebSocket, connectionParams: token ? { token } : {}, ...extra });

  const member = connect(cfg.member);
  const room = cfg.graphqlTransportWS;
  out.follow = await within(10000, follow(room, (sink) =>
    member.subscribe({ query: roomEvents, variables: { r: room.name, after: room.after } }, sink)));
  out.query = await within(10000, once((sink) => member.subscribe({ query: '{ me { login } }' }, sink)));
  await member.dispose();

  // Refused subscriptions reach the error sink as GraphQL errors.
  const outsider = connect(cfg.outsider);
  out.notParticipant = await within(10000, once((sink) =>
    outsider.subscribe({ query: roomEvents, variables: { r: cfg.closedRoom } }, sink)));
  out.noSuchRoom = await within(10000, once((sink) =>
    outsider.subscribe({ query: roomEvents, variables: { r: 'no-such-room' } }, sink)));
  await outsider.dispose();
  const anonymous = connect('');
  out.anonymousInbox = await within(10000, once((sink) =>
    anonymous.subscribe({ query: 'subscription { inboxEvents { kind } }' }, sink)));
  await anonymous.dispose();

  // A bad token: the close reaches the error sink, without retries (the
  // client is allowed three, at once).
  let connects = 0;
  const forged = connect('forged', {
    retryAttempts: 3,
    retryWait: async () => {},
    on: { connecting: () => { connects++; } },
  });
  out.badToken = await within(10000, once((sink) =>
    forged.subscribe({ query: roomEvents, variables: { r: room.name } }, sink)));
  out.badToken.connects = connects;
  await forged.dispose();
  return out;
}

// legacy runs the scenarios with subscriptions-transport-ws.
async function legacy() {
  const out = {};
  const connect = (token, options = {}) =>
    new SubscriptionClient(cfg.ws, { connectionParams: token ? { token } : {}, reconnect: false, ...options }, WebSocket);
  const subscribe = (client, query, variables) => (sink) => client.request({ query, variables }).subscribe(sink);

  const member = connect(cfg.member);
  const room = cfg.graphqlWS;
  out.follow = await within(10000, follow(room, subscribe(member, roomEvents, { r: room.name, after: room.after })));
  member.close();

  const outsider = connect(cfg.outsider);
  out.notParticipant = await within(10000, once(subscribe(outsider, roomEvents, { r: cfg.closedRoom })));
  outsider.close();

  // A bad token: connection_error's payload goes to connectionCallback,
  // then the server closes.
  out.badToken = await within(10000, new Promise((resolve) => {
    const seen = {};
    const client = connect('forged', {
      connectionCallback: (err) => {
        if (err) seen.connectionError = describe(err);
      },
    });
    client.client.addEventListener('close', (ev) => {
      seen.closeCode = ev.code;
      resolve(seen);
    });
  }));
  return out;
}

const results = { graphqlTransportWS: await graphqlWS(), graphqlWS: await legacy() };
console.log(JSON.stringify(results));
process.exit(0);

// Runs the official graphql-sse client against a chatql server, in both of
// its modes, and prints what it saw as one JSON object: distinct connections
// (an event stream per operation) and single connection (one stream per
// client, operations started and stopped by separate requests).
// e2e/sse_client_test.go starts the server, prepares users and rooms, runs
//
//   node clients/graphql-sse/scenarios.mjs '<json config>'
//
// and checks the output. The config names the endpoint (http), two tokens
// (member: creator of the rooms; outsider: a member of none), a room only
// the member is in (closedRoom), and per mode the rooms to follow, each
// with the id of a message (after) and of the one posted after it
// (replayed).
import { createClient } from 'graphql-sse';

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

// describe turns what an error sink received into plain JSON: an HTTP
// response the client refused (NetworkError), or another error.
function describe(err) {
  if (err?.response) return { status: err.response.status };
  return { other: String(err) };
}

// follow reads a room from `after`: the replayed message first, then one
// posted live, then the room's deletion, which must complete the stream.
function follow(client, room) {
  return new Promise((resolve) => {
    const seen = { events: [], completed: false };
    const live = `live in ${room.name}`;
    client.subscribe({ query: roomEvents, variables: { r: room.name, after: room.after } }, {
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

// once runs one operation to its end and reports how it ended: refused
// subscriptions come as a result with errors, then complete.
function once(client, request) {
  return new Promise((resolve) => {
    const seen = { results: [] };
    client.subscribe(request, {
      next: (result) => seen.results.push(result.errors
        ? { errors: result.errors.map((e) => ({ message: e.message, code: e.extensions?.code ?? null })) }
        : result),
      error: (err) => resolve({ ...seen, error: describe(err) }),
      complete: () => resolve({ ...seen, completed: true }),
    });
  });
}

// stopped subscribes to a room, waits for the replayed message, then
// disposes of the subscription (in single connection mode, a DELETE): any
// error the client meets on the way is reported.
function stopped(client, room) {
  return new Promise((resolve) => {
    const seen = { events: 0 };
    let dispose = () => {};
    dispose = client.subscribe({ query: roomEvents, variables: { r: room.name, after: room.after } }, {
      next: () => {
        seen.events++;
        dispose();
        // The client completes a disposed subscription once its DELETE is
        // answered; give the answer time to come back.
        setTimeout(() => resolve(seen), 500);
      },
      error: (err) => {
        seen.error = describe(err);
        resolve(seen);
      },
      complete: () => { seen.completed = true; },
    });
  });
}

// mode runs the scenarios with singleConnection as given. followConnects
// counts the connections the client opened for the two concurrent follows
// (in single connection mode, the event streams it reserved).
async function mode(singleConnection, rooms) {
  const out = {};
  let connects = 0;
  const connect = (token, extra = {}) => createClient({
    url: cfg.http,
    singleConnection,
    headers: { Authorization: `Bearer ${token}` },
    retryAttempts: 0,
    ...extra,
  });

  const member = connect(cfg.member, { on: { connected: () => { connects++; } } });
  out.follow = await within(15000, Promise.all([follow(member, rooms.first), follow(member, rooms.second)]));
  out.followConnects = connects;
  out.stopped = await within(10000, stopped(member, rooms.stopped));
  out.query = await within(10000, once(member, { query: '{ me { login } }' }));
  member.dispose();

  const outsider = connect(cfg.outsider);
  out.notParticipant = await within(10000, once(outsider, { query: roomEvents, variables: { r: cfg.closedRoom } }));
  outsider.dispose();

  const forged = connect('forged');
  out.badToken = await within(10000, once(forged, { query: roomEvents, variables: { r: cfg.closedRoom } }));
  forged.dispose();
  return out;
}

const results = {
  distinct: await mode(false, cfg.distinct),
  single: await mode(true, cfg.single),
};
console.log(JSON.stringify(results));
process.exit(0);

// The typed client end to end, against a running chatql:
//   node dist/example/example.js http://localhost:8080/query
// Two users sign up; alice follows a room live while bob posts to it, one
// post's answer lost on the way (sent again under its clientMessageId, it
// is stored once), and alice's socket dropped (her subscription resumes
// from its last cursor, missing nothing). Prints what it saw; exits 1 on
// anything unexpected.
import WebSocket from "ws";
import {
  ChatClient,
  CreateRoomDocument,
  JoinRoomDocument,
  MessagesDocument,
  RoomEventsDocument,
  SignupDocument,
  type RoomEventsSubscription,
} from "../src/index.js";

const url = process.argv[2] ?? "http://localhost:8080/query";
const suffix = Math.random().toString(36).slice(2, 8);
const room = `typed-${suffix}`;
const password = "through-the-looking-glass";

function check(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(what);
}

async function newUser(login: string, options: { fetch?: typeof fetch } = {}): Promise<ChatClient> {
  const anonymous = new ChatClient({ url });
  await anonymous.request(SignupDocument, { input: { login, password, firstname: login, lastname: "Example" } });
  const client = new ChatClient({ url, webSocketImpl: WebSocket, ...options });
  await client.login(login, password);
  return client;
}

// Bob's fetch loses the answer of his first post: the server stores it,
// and the client hears nothing.
let lost = 0;
const losingFetch: typeof fetch = async (input, init) => {
  const resp = await fetch(input, init);
  if (lost === 0 && typeof init?.body === "string" && init.body.includes("PostMessage")) {
    lost++;
    throw new TypeError("fetch failed (the answer was lost)");
  }
  return resp;
};

const alice = await newUser(`alice-${suffix}`);
const bob = await newUser(`bob-${suffix}`, { fetch: losingFetch });
await alice.request(CreateRoomDocument, { input: { name: room } });
await bob.request(JoinRoomDocument, { room });

// Alice follows the room from her first post on: the server replays what
// came after it, so nothing posted once she subscribed is missed.
const first = await alice.send({ room }, "Let the jury consider their verdict.");
const seen: string[] = [];
let waiting: { content: string; resolve: () => void } | null = null;
const sub = alice.subscribe(
  RoomEventsDocument,
  (after) => ({ room, after }),
  (e: RoomEventsSubscription) => e.roomEvents.cursor,
  {
    after: first.id,
    next: (e) => {
      if (e.roomEvents.kind !== "MESSAGE_POSTED" || !e.roomEvents.message) return;
      seen.push(e.roomEvents.message.content);
      if (waiting && e.roomEvents.message.content === waiting.content) waiting.resolve();
    },
    error: (err) => {
      console.error("subscription:", err);
      process.exit(1);
    },
  },
);
const arrives = (content: string) =>
  seen.includes(content)
    ? Promise.resolve()
    : Promise.race([
        new Promise<void>((resolve) => (waiting = { content, resolve })),
        new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`"${content}" never arrived; alice saw ${JSON.stringify(seen)}`)), 15_000)),
      ]);

// 1. A send whose answer is lost is sent again under its clientMessageId.
const sent = await bob.send({ room }, "No, no! Sentence first, verdict afterwards.");
check(lost === 1, "the first answer was not lost");
await arrives(sent.content);

// 2. Alice's socket drops; bob posts meanwhile; her subscription resumes
// from its last cursor and gets the post once.
await alice.reconnect();
await bob.send({ room }, "Stuff and nonsense!");
await arrives("Stuff and nonsense!");
await bob.send({ room }, "Who cares for you?");
await arrives("Who cares for you?");
sub.close();
await alice.dispose();

const { messages } = await alice.request(MessagesDocument, { room, first: 10 });
const history = messages.edges.map((e) => e.node.content).filter((c) => !c.endsWith("joined the room"));
const want = ["Who cares for you?", "Stuff and nonsense!", "No, no! Sentence first, verdict afterwards.", "Let the jury consider their verdict."];
check(JSON.stringify(history) === JSON.stringify(want), `the room's history: ${JSON.stringify(history)}, want ${JSON.stringify(want)}`);
const live = ["No, no! Sentence first, verdict afterwards.", "Stuff and nonsense!", "Who cares for you?"];
check(JSON.stringify(seen) === JSON.stringify(live), `alice saw live ${JSON.stringify(seen)}, want ${JSON.stringify(live)}`);
console.log(JSON.stringify({ ok: true, room, live: seen, retriedPostStoredOnce: true, resumedAfterDrop: true }));
process.exit(0);

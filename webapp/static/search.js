// The search box: searchMessages over every conversation the user reads,
// each hit a snippet with the words found marked; choosing one opens its
// conversation and, when the message is among those shown, scrolls to it.
// It needs nothing of app.js but the page's elements: app.js imports it,
// and it shows itself while someone is signed in.
import * as api from "./api.js";

const searchQuery = `query Search($q: String!, $after: String) {
  searchMessages(query: $q, first: 20, after: $after) {
    edges { cursor node { id room author { login } postedAt } snippet { text match } }
    pageInfo { hasNextPage endCursor } } }`;

const form = document.createElement("form");
form.className = "search";
form.setAttribute("role", "search");
const input = Object.assign(document.createElement("input"), {
  type: "search",
  placeholder: 'Search messages ("phrase", from:login, in:room)',
  maxLength: 256,
});
input.setAttribute("aria-label", "Search messages");
const results = Object.assign(document.createElement("ol"), { className: "search-results", hidden: true });
const status = Object.assign(document.createElement("p"), { className: "status" });
status.setAttribute("role", "status");
form.append(input, results, status);

let after = null; // the next page's cursor
let more = null; // the "More results" button

// place puts the box in the chat's header, shown while someone is signed in.
function place() {
  const top = document.querySelector("#chat .top");
  if (top && !form.isConnected) top.querySelector("h1").after(form);
  form.hidden = !api.currentUser();
  if (form.hidden) close();
}
api.onSession(place);
place();

form.addEventListener("submit", (e) => {
  e.preventDefault();
  after = null;
  results.replaceChildren();
  search();
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Escape") close();
});

function close() {
  results.hidden = true;
  results.replaceChildren();
  status.textContent = "";
  more?.remove();
}

async function search() {
  const q = input.value.trim();
  if (!q) return close();
  status.textContent = "Searching…";
  more?.remove();
  try {
    const { searchMessages: page } = await api.gql(searchQuery, { q, after });
    for (const edge of page.edges) results.append(hit(edge));
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    status.textContent = results.children.length ? "" : "Nothing found.";
    if (after) {
      more = Object.assign(document.createElement("button"), { type: "button", textContent: "More results" });
      more.addEventListener("click", search);
      status.after(more);
    }
  } catch (err) {
    status.textContent = err.message; // BAD_USER_INPUT says what to change, RATE_LIMITED when to retry
  }
  results.hidden = results.children.length === 0;
}

// hit is one result: where, who, when, and the snippet with its matches in
// <mark>, made of text nodes only (the content is the sender's).
function hit({ node, snippet }) {
  const li = document.createElement("li");
  const a = document.createElement("a");
  a.href = conversationLink(node.room);
  const where = document.createElement("span");
  where.className = "search-where";
  const place = node.room.includes(":") ? `@${peerOf(node.room)}` : `# ${node.room}`;
  where.textContent = `${place} · ${node.author.login} · ${new Date(node.postedAt).toLocaleString()}`;
  const text = document.createElement("span");
  for (const part of snippet) {
    text.append(part.match ? Object.assign(document.createElement("mark"), { textContent: part.text }) : part.text);
  }
  a.append(where, text);
  a.addEventListener("click", () => {
    close();
    scrollToWhenShown(node.id);
  });
  li.append(a);
  return li;
}

function peerOf(conversation) {
  const [a, b] = conversation.split(":");
  return a === api.currentUser()?.login ? b : a;
}

// conversationLink is the app's link to a conversation (app.js reads it
// from the location's hash).
function conversationLink(conversation) {
  return conversation.includes(":") ? `#dm/${encodeURIComponent(peerOf(conversation))}` : `#room/${encodeURIComponent(conversation)}`;
}

// scrollToWhenShown scrolls to the message once the conversation shows it
// (app.js renders each message as li#m-<id>) while it loads. A message
// older than the pages it loads is not reached: the conversation stays
// open at its newest.
function scrollToWhenShown(id) {
  const list = document.getElementById("messages");
  const reveal = () => {
    const li = document.getElementById(`m-${id}`);
    if (!li) return false;
    li.scrollIntoView({ block: "center" });
    li.classList.add("search-found");
    setTimeout(() => li.classList.remove("search-found"), 2000);
    return true;
  };
  if (!list || reveal()) return;
  const watch = new MutationObserver(() => reveal() && watch.disconnect());
  watch.observe(list, { childList: true });
  setTimeout(() => watch.disconnect(), 10_000);
}

// The app's service worker: it shows the server's Web Push notifications
// and opens their conversation when one is clicked. It is served from the
// root of the site, so its scope is the whole app. A push's data is the
// server's notification as JSON (notify.Notification): kind, conversation,
// title, body, count, message (the newest message's id) and notices.

// showPush shows one notification; its tag is the conversation, so a newer
// push of the same conversation replaces the older one (renotify: and
// tells again). A function of its own, so the browser tests can call it.
function showPush(note) {
  const title = note.title || "New message";
  return self.registration.showNotification(title, {
    body: note.body || "",
    tag: note.conversation || "chatql",
    renotify: true,
    data: { conversation: note.conversation || null, message: note.message || null },
  });
}

self.addEventListener("push", (event) => {
  let note = {};
  try {
    note = event.data ? event.data.json() : {};
  } catch {
    // Not JSON: still show something, as userVisibleOnly promises.
  }
  event.waitUntil(showPush(note));
});

// openConversation focuses a window of the app and has it open the
// conversation (app.js listens for the message), or opens a new one at the
// conversation's address.
async function openConversation(conversation) {
  const url = new URL(conversation ? `/#conversation/${encodeURIComponent(conversation)}` : "/", self.location.origin).href;
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const win = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (win) {
    if (conversation) win.postMessage({ open: conversation });
    await win.focus();
    return;
  }
  await self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(openConversation(event.notification.data?.conversation));
});

// A new version takes over at once: it has no cache to migrate.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

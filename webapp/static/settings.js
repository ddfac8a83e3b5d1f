// The account's settings, in a dialog the header's "Settings" button opens:
// the email address (verified or not, the link sent again), a first
// password for an account made by single sign-on, passkeys, two-factor
// sign-in (turned on with the key's otpauth:// URI and a code, recovery
// codes shown once, regenerated, turned off), the devices signed in, and
// the identities of the OpenID Connect provider linked to the account.
// Also the "Sign in with <provider>" button of the signed-out page, and
// the provider's return to the app (?oidc&code=...&state=...), which
// signs in or links. Like search.js it keeps to itself: app.js imports it.
import * as api from "./api.js";

const q = {
  provider: `query Provider { oidcProvider { name issuer } }`,
  settings: `query Settings { me { login email emailVerified hasPassword }
    passkeys { id name createdAt lastUsedAt } twoFactor { enabled recoveryCodesLeft }
    sessions { id device address signInMethod lastSeenAt current }
    identities { issuer subject email linkedAt } oidcProvider { name issuer } }`,
  setEmail: `mutation SetEmail($e: String!) { setEmail(email: $e) { email emailVerified } }`,
  resend: `mutation Resend { requestEmailVerification }`,
  setPassword: `mutation SetPassword($p: String!) { setPassword(password: $p) }`,
  beginPasskey: `mutation BeginPasskey { beginPasskeyRegistration { options state } }`,
  finishPasskey: `mutation FinishPasskey($s: String!, $c: String!, $n: String) { finishPasskeyRegistration(state: $s, credential: $c, name: $n) { id } }`,
  deletePasskey: `mutation DeletePasskey($id: ID!) { deletePasskey(id: $id) }`,
  beginTwoFactor: `mutation BeginTwoFactor($p: String!) { beginTwoFactor(password: $p) { secret uri qrCode } }`,
  confirmTwoFactor: `mutation ConfirmTwoFactor($c: String!) { confirmTwoFactor(code: $c) }`,
  regenerate: `mutation Regenerate($c: String) { regenerateRecoveryCodes(code: $c) }`,
  disableTwoFactor: `mutation DisableTwoFactor($c: String!) { disableTwoFactor(code: $c) }`,
  endSession: `mutation EndSession($id: ID!) { endSession(id: $id) }`,
  beginOidc: `mutation BeginOidc { beginOidcSignIn { url flow } }`,
  finishOidc: `mutation FinishOidc($f: String!, $c: String!, $s: String!) { finishOidcSignIn(flow: $f, code: $c, state: $s) {
    token expiresAt refreshToken refreshExpiresAt user { login firstname lastname } } }`,
  linkOidc: `mutation LinkOidc($f: String!, $c: String!, $s: String!) { linkOidcIdentity(flow: $f, code: $c, state: $s) { issuer } }`,
  unlinkOidc: `mutation UnlinkOidc($i: String!, $s: String!) { unlinkOidcIdentity(issuer: $i, subject: $s) }`,
  verifyTwoFactor: `mutation VerifyTwoFactor($ch: String!, $c: String!) { verifyTwoFactor(challenge: $ch, code: $c) {
    token expiresAt refreshToken refreshExpiresAt user { login firstname lastname } } }`,
};

const flowKey = "chatql.oidc"; // sessionStorage: the flow begun, and what for
const methods = { PASSWORD: "password", PASSKEY: "passkey", OIDC: "single sign-on" };

// el makes an element: el("p", { className: "x" }, "text", child...).
function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}
const when = (t) => new Date(t).toLocaleString();

// form makes a form of labelled inputs and a submit button; onSubmit gets
// the inputs' values by name and the form.
let ids = 0;
function form(fields, button, onSubmit) {
  const f = el("form", { className: "settings-form" });
  for (const { label, ...input } of fields) {
    const id = `settings-field-${++ids}`;
    f.append(el("label", { htmlFor: id }, label), el("input", { id, ...input }));
  }
  f.append(el("button", { type: "submit" }, button));
  f.addEventListener("submit", (e) => {
    e.preventDefault();
    act(() => onSubmit(Object.fromEntries(new FormData(f)), f));
  });
  return f;
}

// ---- The dialog ----

let dialog = null;
let status = null;
let error = null;
let body = null;
let shownCodes = null; // recovery codes to show this once: { codes, why }
let setup = null; // a two-factor key begun: { secret, uri }

function makeDialog() {
  dialog = el("dialog", { id: "settings", className: "settings" });
  dialog.setAttribute("aria-labelledby", "settings-title");
  const close = el("button", { type: "button" }, "Close");
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    shownCodes = null; // shown once
    setup = null;
  });
  status = el("p", { className: "status" });
  status.setAttribute("role", "status");
  error = el("p", { className: "error" });
  error.setAttribute("role", "alert");
  body = el("div", { className: "settings-body" });
  dialog.append(el("header", { className: "settings-head" }, el("h2", { id: "settings-title" }, "Settings"), close), status, error, body);
  document.body.append(dialog);
}

/** Opens the settings, read afresh; say is a status to show. */
export async function openSettings(say = "") {
  if (!dialog) makeDialog();
  if (!dialog.open) dialog.showModal();
  status.textContent = say;
  error.textContent = "";
  await render();
}

// act runs a change, then shows the settings as they are now, and then
// what the change says (its result) or the error it failed with: only once
// the page is redrawn, so that what is read out matches what shows.
async function act(change) {
  error.textContent = "";
  status.textContent = "";
  let said = "";
  let failure = null;
  try {
    said = (await change()) ?? "";
  } catch (err) {
    failure = err;
  }
  try {
    await render();
  } catch (err) {
    failure ??= err;
  }
  if (failure) error.textContent = failure.message;
  else status.textContent = said;
}

async function render() {
  const d = await api.gql(q.settings);
  const sections = [email(d.me), d.me.hasPassword ? null : password(), passkeys(d.passkeys), twoFactor(d.twoFactor, d.me.hasPassword),
    devices(d.sessions), identities(d.identities, d.oidcProvider)];
  body.replaceChildren(...sections.filter(Boolean));
}

function section(id, title, ...children) {
  const s = el("section", { id: `settings-${id}`, className: "settings-section" }, el("h3", { id: `settings-${id}-title` }, title), ...children);
  s.setAttribute("aria-labelledby", `settings-${id}-title`);
  return s;
}

function email(me) {
  const state = me.email
    ? el("p", {}, `${me.email}: `, el("strong", {}, me.emailVerified ? "verified" : "not verified yet"))
    : el("p", {}, "No email address: one lets you reset a forgotten password.");
  let resend = null;
  if (me.email && !me.emailVerified) {
    resend = el("button", { type: "button" }, "Send the verification link again");
    resend.addEventListener("click", () =>
      act(async () => {
        await api.gql(q.resend);
        return `A link to verify it was sent to ${me.email}.`;
      }));
  }
  const f = form([{ label: "Email address", name: "email", type: "email", value: me.email, autocomplete: "email", maxLength: 254 }], "Save the address", async (v) => {
    await api.gql(q.setEmail, { e: v.email.trim() });
    return v.email.trim() ? `Saved: a link to verify it was sent to ${v.email.trim()}.` : "The address was removed.";
  });
  return section("email", "Email", state, resend, f);
}

function password() {
  return section("password", "Password",
    el("p", {}, "Your account signs in with single sign-on and has no password. Set one to sign in with it too (it needs a sign-in in the last 10 minutes)."),
    form([{ label: "New password", name: "password", type: "password", autocomplete: "new-password", required: true, minLength: 8, maxLength: 72 }], "Set the password", async (v) => {
      await api.gql(q.setPassword, { p: v.password });
      return "Your password is set.";
    }));
}

function passkeys(list) {
  const items = list.map((p) => {
    const remove = el("button", { type: "button" }, "Remove");
    remove.setAttribute("aria-label", `Remove the passkey ${p.name}`);
    remove.addEventListener("click", () =>
      act(async () => {
        await api.gql(q.deletePasskey, { id: p.id });
        return `The passkey ${p.name} was removed.`;
      }));
    return el("li", {}, el("span", {}, el("strong", {}, p.name), ` added ${when(p.createdAt)}`, p.lastUsedAt ? `, last used ${when(p.lastUsedAt)}` : ", never used"), remove);
  });
  const add = form([{ label: "Passkey name", name: "name", placeholder: "Laptop", maxLength: 64 }], "Add a passkey", async (v, f) => {
    const begun = (await api.gql(q.beginPasskey)).beginPasskeyRegistration;
    const options = JSON.parse(begun.options);
    const made = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey) });
    await api.gql(q.finishPasskey, { s: begun.state, c: JSON.stringify(made.toJSON()), n: v.name.trim() || null });
    f.reset();
    return "The passkey was added: it signs you in with no password.";
  });
  return section("passkeys", "Passkeys", items.length ? el("ul", { className: "settings-list" }, ...items) : el("p", {}, "No passkeys."), add);
}

function twoFactor(tf, hasPassword) {
  const parts = [];
  if (shownCodes) {
    parts.push(el("div", { className: "settings-codes" },
      el("p", {}, shownCodes.why, " Each signs in once in place of a code. Keep them somewhere safe: they are shown only now."),
      el("ol", { id: "settings-recovery-codes" }, ...shownCodes.codes.map((c) => el("li", {}, el("code", {}, c))))));
  }
  if (tf.enabled) {
    parts.push(el("p", {}, el("strong", {}, "On:"), ` sign-in asks for a code of your authenticator app. ${tf.recoveryCodesLeft} recovery codes left.`));
    parts.push(form([{ label: "Code from the app (not needed within 10 minutes of signing in)", name: "code", autocomplete: "one-time-code", inputMode: "numeric" }], "Make new recovery codes", async (v) => {
      const codes = (await api.gql(q.regenerate, { c: v.code.trim() || null })).regenerateRecoveryCodes;
      shownCodes = { codes, why: "Your new recovery codes: the old ones no longer work." };
    }));
    parts.push(form([{ label: "Code or recovery code", name: "code", autocomplete: "one-time-code", required: true }], "Turn off two-factor sign-in", async (v) => {
      await api.gql(q.disableTwoFactor, { c: v.code.trim() });
      shownCodes = null;
      return "Two-factor sign-in is off.";
    }));
  } else if (setup) {
    const link = el("a", { href: setup.uri }, "Open in your authenticator app");
    parts.push(el("p", {}, "Scan this code with your authenticator app:"));
    parts.push(el("img", { id: "settings-totp-qr", src: setup.qrCode, width: 192, height: 192, alt: "QR code of your two-factor key (the key is also written below)" }));
    parts.push(el("p", {}, link, ", or type the key in: ", el("code", { id: "settings-totp-secret" }, setup.secret)));
    parts.push(form([{ label: "Code from the app", name: "code", autocomplete: "one-time-code", inputMode: "numeric", required: true }], "Confirm", async (v) => {
      const codes = (await api.gql(q.confirmTwoFactor, { c: v.code.trim() })).confirmTwoFactor;
      setup = null;
      shownCodes = { codes, why: "Two-factor sign-in is on. Your recovery codes:" };
    }));
  } else if (!hasPassword) {
    parts.push(el("p", {}, "Off. Turning it on asks for your password: set one first."));
  } else {
    parts.push(el("p", {}, "Off: your password alone signs you in."));
    parts.push(form([{ label: "Your password", name: "password", type: "password", autocomplete: "current-password", required: true }], "Turn on two-factor sign-in", async (v) => {
      setup = (await api.gql(q.beginTwoFactor, { p: v.password })).beginTwoFactor;
    }));
  }
  return section("two-factor", "Two-factor sign-in", ...parts);
}

function devices(list) {
  const items = list.map((s) => {
    let end = el("strong", {}, "this device");
    if (!s.current) {
      end = el("button", { type: "button" }, "End");
      end.setAttribute("aria-label", `End the session of ${s.device}`);
      end.addEventListener("click", () =>
        act(async () => {
          await api.gql(q.endSession, { id: s.id });
          return `${s.device} is signed out.`;
        }));
    }
    const where = s.address ? ` from ${s.address}` : "";
    return el("li", {}, el("span", {}, el("strong", {}, s.device), ` (${methods[s.signInMethod] ?? s.signInMethod}), last seen ${when(s.lastSeenAt)}${where}`), end);
  });
  return section("devices", "Devices", el("ul", { className: "settings-list" }, ...items));
}

function identities(list, provider) {
  if (!list.length && !provider) return null;
  const items = list.map((id) => {
    const unlink = el("button", { type: "button" }, "Unlink");
    const name = id.email || id.subject;
    unlink.setAttribute("aria-label", `Unlink ${name}`);
    unlink.addEventListener("click", () =>
      act(async () => {
        await api.gql(q.unlinkOidc, { i: id.issuer, s: id.subject });
        return `${name} no longer signs you in.`;
      }));
    return el("li", {}, el("span", {}, el("strong", {}, name), ` at ${hostOf(id.issuer)}, linked ${when(id.linkedAt)}`), unlink);
  });
  let link = null;
  if (provider) {
    link = el("button", { type: "button" }, `Link an account at ${provider.name}`);
    link.addEventListener("click", () => act(() => toProvider("link")));
  }
  return section("identities", "Single sign-on", items.length ? el("ul", { className: "settings-list" }, ...items) : el("p", {}, "No linked accounts."), link);
}

function hostOf(issuer) {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}

// ---- Single sign-on: to the provider and back ----

// toProvider begins a flow and sends the browser to the provider, which
// sends it back here (?oidc&code=...&state=...) to finish it: to sign in,
// or to link the identity to the signed-in account.
async function toProvider(intent) {
  const { url, flow } = (await api.gql(q.beginOidc)).beginOidcSignIn;
  sessionStorage.setItem(flowKey, JSON.stringify({ flow, intent }));
  location.assign(url);
}

async function backFromProvider() {
  const params = new URLSearchParams(location.search);
  if (!params.has("oidc")) return;
  const begun = JSON.parse(sessionStorage.getItem(flowKey) || "null");
  sessionStorage.removeItem(flowKey);
  history.replaceState(null, "", location.pathname + location.hash); // the code works once: off the address bar
  const code = params.get("code");
  const state = params.get("state");
  const failed = params.get("error_description") || params.get("error");
  const authError = document.getElementById("auth-error");
  if (!begun || !code || !state) {
    if (authError) authError.textContent = failed ? `The sign-in failed: ${failed}` : "The sign-in was not begun here: try again.";
    return;
  }
  if (begun.intent === "link") {
    try {
      await api.gql(q.linkOidc, { f: begun.flow, c: code, s: state });
      await openSettings("The account was linked: it signs you in from now on.");
    } catch (err) {
      await openSettings();
      error.textContent = err.message;
    }
    return;
  }
  try {
    const d = await api.gql(q.finishOidc, { f: begun.flow, c: code, s: state });
    api.startSession(d.finishOidcSignIn);
  } catch (err) {
    if (err.code === "TWO_FACTOR_REQUIRED") askForCode(err);
    else if (authError) authError.textContent = err.message;
  }
}

/**
 * Asks, on the signed-out page, for the one-time code a sign-in needs (err
 * is its TWO_FACTOR_REQUIRED, whose extensions.challenge the code answers),
 * then signs in with it.
 */
export function askForCode(err) {
  const challenge = err.errors?.[0]?.extensions?.challenge;
  const authError = document.getElementById("auth-error");
  document.getElementById("two-factor-form")?.remove();
  const f = el("form", { id: "two-factor-form", className: "two-factor" },
    el("h2", { id: "two-factor-title" }, "Two-factor sign-in"),
    el("label", { htmlFor: "two-factor-code" }, "One-time code (or a recovery code)"),
    el("input", { id: "two-factor-code", name: "code", autocomplete: "one-time-code", required: true }),
    el("button", { type: "submit" }, "Verify"));
  f.setAttribute("aria-labelledby", "two-factor-title");
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    authError.textContent = "";
    try {
      const d = await api.gql(q.verifyTwoFactor, { ch: challenge, c: new FormData(f).get("code").trim() });
      f.remove();
      api.startSession(d.verifyTwoFactor);
    } catch (failure) {
      authError.textContent = failure.message;
    }
  });
  document.querySelector("#auth .auth-forms").after(f);
  f.querySelector("input").focus();
}

// The signed-out page offers the provider, if the server has one.
async function offerProvider() {
  const forms = document.querySelector("#auth .auth-forms");
  if (!forms || document.getElementById("oidc-sign-in")) return;
  const provider = (await api.gql(q.provider)).oidcProvider;
  if (!provider) return;
  const button = el("button", { type: "button", id: "oidc-sign-in" }, `Sign in with ${provider.name}`);
  button.addEventListener("click", () =>
    toProvider("signin").catch((err) => (document.getElementById("auth-error").textContent = err.message)));
  forms.after(el("p", { className: "oidc" }, button));
}

// ---- The header's button ----

const open = el("button", { type: "button", id: "settings-open" }, "Settings");
open.addEventListener("click", () => openSettings().catch((err) => (error.textContent = err.message)));

function place() {
  const logout = document.getElementById("logout");
  if (logout && !open.isConnected) logout.before(open);
  if (!api.currentUser() && dialog?.open) dialog.close();
  if (api.currentUser()) document.getElementById("two-factor-form")?.remove();
}
api.onSession(place);
place();
offerProvider().catch(() => {}); // no provider offered if the server cannot say
backFromProvider();

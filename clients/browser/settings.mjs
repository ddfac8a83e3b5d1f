// The web app's account settings and single sign-on in the real browser
// (driven by e2e/settings_browser_test.go):
//
//   node settings.mjs '{"url": "http://localhost:PORT", "chromium": "/usr/bin/chromium", "screenshots": "dir", "provider": "127.0.0.1:PORT"}'
//
// At a desktop's size and a phone's, a user signed in with the password
// opens Settings and, through the page alone: sets an email address (shown
// not verified) and has the link sent again; adds a passkey (Chromium's
// virtual authenticator makes a real one) and removes it; turns two-factor
// sign-in on with the key shown and a code computed from it (RFC 6238),
// sees the recovery codes once, makes new ones, signs in again with a code
// the page asks for, and turns it off with a recovery code;
// ends another of their sessions; links an account at the test provider
// (whose sign-in page is a form the browser fills and submits: the whole
// authorization code + PKCE redirect flow) and unlinks it. Then someone new
// signs in with the provider's button on the signed-out page, which makes
// their account, adds a passkey and unlinks the identity (the passkey's
// removal is then refused: the last way in), and sets a first password. Every screen is
// checked by axe-core and kept as a screenshot. It prints what it checked,
// as JSON, and exits 1 at the first failure.
import { chromium } from "playwright-core";
import { createHmac } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const cfg = JSON.parse(process.argv[2]);
mkdirSync(cfg.screenshots, { recursive: true });
const password = "wonderland";

async function gql(query, variables = {}, token) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const resp = await fetch(`${cfg.url}/query`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  const body = await resp.json();
  if (body.errors) throw new Error(`${query.slice(0, 50)}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// totp is the RFC 6238 code of a base32 secret (SHA-1, 6 digits, 30 s)
// at the time step `step` from now.
function totp(secret, step = 0) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of secret.replace(/=+$/, "").toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30_000) + step));
  const mac = createHmac("sha1", key).update(counter).digest();
  const at = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}

const axeSource = readFileSync(new URL("./node_modules/axe-core/axe.min.js", import.meta.url), "utf8");
const audited = [];

// shot keeps a screenshot and checks the screen with axe-core (no serious
// or critical violation), as scenarios.mjs does, and that nothing is wider
// than the screen.
async function shot(page, name, width) {
  await page.screenshot({ path: join(cfg.screenshots, `${name}.png`) });
  const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
  check(scroll <= width, `${name}: the page is ${scroll} px wide at ${width} px`);
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { violations } = await window.axe.run(document, { resultTypes: ["violations"] });
    return violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
  check(violations.length === 0, `axe-core on ${name}: ${violations.join("; ")}`);
  audited.push(name);
}

const browser = await chromium.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const pages = [];
const result = { checked: [] };

async function newPage(viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (err) => console.error(`page error: ${err.message}`));
  pages.push(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return page;
}

// atProvider signs in at the test provider's page as username.
async function atProvider(page, username) {
  await page.waitForURL((u) => u.host === cfg.provider);
  await page.getByLabel("Username").fill(username);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.host !== cfg.provider);
}

async function settingsOf(size, viewport) {
  const login = `alice-${size}`;
  await gql("mutation($i: SignupInput!) { signup(input: $i) { login } }", { i: { login, password, firstName: "Alice", lastName: "Liddell" } });
  await gql('mutation($l: String!, $p: String!) { login(login: $l, password: $p, device: "Old phone") { token } }', { l: login, p: password });

  const page = await newPage(viewport);
  await page.goto(`${cfg.url}/`);
  await page.locator("#login-login").fill(login);
  await page.locator("#login-password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator("#chat").waitFor();
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  const say = dialog.getByRole("status");
  await dialog.locator("#settings-devices li").first().waitFor();
  await shot(page, `settings-${size}`, viewport.width);

  // Email: set, not verified, the link sent again.
  await dialog.getByLabel("Email address").fill(`${login}@example.com`);
  await dialog.getByRole("button", { name: "Save the address" }).click();
  await dialog.getByText("not verified yet").waitFor();
  await dialog.getByRole("button", { name: "Send the verification link again" }).click();
  await say.filter({ hasText: "was sent to" }).waitFor();

  // A passkey, made by the virtual authenticator.
  await dialog.getByLabel("Passkey name").fill("Laptop");
  await dialog.getByRole("button", { name: "Add a passkey" }).click();
  await dialog.getByRole("button", { name: "Remove the passkey Laptop" }).waitFor();

  // Two-factor sign-in: the key, a code, the recovery codes once.
  await dialog.getByLabel("Your password").fill(password);
  await dialog.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
  const secret = await dialog.locator("#settings-totp-secret").textContent();
  const uri = await dialog.getByRole("link", { name: "Open in your authenticator app" }).getAttribute("href");
  check(uri.startsWith("otpauth://totp/") && uri.includes(`secret=${secret}`), `the key's link is ${uri}`);
  const qr = dialog.getByRole("img", { name: /QR code of your two-factor key/ });
  await qr.waitFor();
  const drawn = await qr.evaluate((img) => img.complete && img.naturalWidth === 256 && img.width === 192);
  check(drawn, "the key's QR code is not drawn");
  await shot(page, `settings-two-factor-setup-${size}`, viewport.width);
  await dialog.getByLabel("Code from the app", { exact: true }).fill(totp(secret));
  await dialog.getByRole("button", { name: "Confirm" }).click();
  const codes = dialog.locator("#settings-recovery-codes li");
  await codes.nth(9).waitFor();
  const first = await codes.allTextContents();
  await shot(page, `settings-recovery-codes-${size}`, viewport.width);
  // New codes, on the proof of this fresh sign-in with two factors.
  await dialog.getByRole("button", { name: "Make new recovery codes" }).click();
  await dialog.getByText("the old ones no longer work").waitFor();
  const second = await codes.allTextContents();
  check(second.length === 10 && !second.includes(first[0]), `new recovery codes ${second}, were ${first}`);

  // Devices: the other session ends.
  await dialog.getByRole("button", { name: "End the session of Old phone" }).click();
  await say.filter({ hasText: "Old phone is signed out." }).waitFor();
  await dialog.getByRole("button", { name: "End the session of Old phone" }).waitFor({ state: "detached" });

  // Signing in again asks for a code of the app.
  await dialog.getByRole("button", { name: "Close" }).click();
  await page.getByRole("button", { name: "Log out" }).click();
  await page.locator("#login-login").fill(login);
  await page.locator("#login-password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByLabel("One-time code (or a recovery code)").fill(totp(secret, 1));
  await shot(page, `signed-out-code-${size}`, viewport.width);
  await page.getByRole("button", { name: "Verify" }).click();
  await page.locator("#chat").waitFor();
  await page.getByRole("button", { name: "Settings" }).click();
  await dialog.locator("#settings-devices li").first().waitFor();

  // Single sign-on: link an account at the provider, through its page.
  await dialog.getByRole("button", { name: `Link an account at ${cfg.provider}` }).click();
  await atProvider(page, `${login}-idp`);
  await say.filter({ hasText: "The account was linked" }).waitFor();
  await dialog.getByRole("button", { name: `Unlink ${login}-idp@idp.example` }).waitFor();
  await shot(page, `settings-linked-${size}`, viewport.width);
  await dialog.getByRole("button", { name: `Unlink ${login}-idp@idp.example` }).click();
  await dialog.getByText("No linked accounts.").waitFor();

  // Off with a recovery code; the passkey removed.
  await dialog.getByLabel("Code or recovery code").fill(second[0]);
  await dialog.getByRole("button", { name: "Turn off two-factor sign-in" }).click();
  await dialog.getByText("Off: your password alone signs you in.").waitFor();
  await dialog.getByRole("button", { name: "Remove the passkey Laptop" }).click();
  await dialog.getByText("No passkeys.").waitFor();
  await shot(page, `settings-done-${size}`, viewport.width);
  const text = await dialog.textContent();
  check(!/\b(null|undefined)\b/.test(text), `the settings show a missing value: ${text}`);
  result.checked.push(login);
}

// Someone new signs in with the provider's button: their account is made;
// in Settings they add a passkey, unlink the identity, are refused the
// removal of their last way in, and give the account a first password.
async function signInWithProvider(size, viewport) {
  const page = await newPage(viewport);
  await page.goto(`${cfg.url}/`);
  const button = page.getByRole("button", { name: `Sign in with ${cfg.provider}` });
  await button.waitFor();
  await shot(page, `signed-out-with-provider-${size}`, viewport.width);
  await button.click();
  const who = `carol-${size}`;
  await atProvider(page, who);
  await page.locator("#chat").waitFor();
  const user = await page.evaluate(() => JSON.parse(sessionStorage.getItem("chatql.session")).user.login);
  check(user === who, `signed in as ${user}, want ${who}`);
  check(!new URL(page.url()).search.includes("code="), `the code stays in the address bar: ${page.url()}`);
  await page.getByRole("button", { name: "Settings" }).click();
  const dialog = page.getByRole("dialog", { name: "Settings" });
  // With a passkey, the identity may go; then the passkey is the last way
  // in, which the server refuses to remove.
  await dialog.getByLabel("Passkey name").fill("Phone");
  await dialog.getByRole("button", { name: "Add a passkey" }).click();
  await dialog.getByRole("button", { name: "Remove the passkey Phone" }).waitFor();
  await dialog.getByRole("button", { name: `Unlink ${who}@idp.example` }).click();
  await dialog.getByText("No linked accounts.").waitFor();
  await dialog.getByRole("button", { name: "Remove the passkey Phone" }).click();
  await dialog.getByRole("alert").filter({ hasText: "last way to sign in" }).waitFor();
  await dialog.getByLabel("New password").fill(`${who}-password`);
  await shot(page, `settings-no-password-${size}`, viewport.width);
  await dialog.getByRole("button", { name: "Set the password" }).click();
  await dialog.getByRole("status").filter({ hasText: "Your password is set." }).waitFor();
  await gql("mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }", { l: who, p: `${who}-password` });
  result.checked.push(who);
}

let failed = false;
try {
  for (const [size, viewport] of [["desktop", { width: 1100, height: 800 }], ["phone", { width: 390, height: 800 }]]) {
    await settingsOf(size, viewport);
    await signInWithProvider(size, viewport);
  }
  result.audited = audited;
} catch (err) {
  failed = true;
  result.error = String(err.stack || err);
  for (const [i, page] of pages.entries()) await page.screenshot({ path: join(cfg.screenshots, `failed-settings-${i}.png`) }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(failed ? 1 : 0);

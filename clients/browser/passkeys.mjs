// Passkeys in the real browser (driven by e2e/passkeys_browser_test.go):
// Chromium's virtual authenticator, added through the DevTools protocol
// (WebAuthn.addVirtualAuthenticator), makes and uses a real discoverable
// credential, so the server verifies real attestations and assertions.
//
//   node passkeys.mjs '{"url": "http://localhost:PORT", "chromium": "/usr/bin/chromium", "token": "..."}'
//
// It registers a passkey for the user whose access token it is given,
// signs in with it with no login or password, deletes it, and tries to
// sign in with it again; it prints what each step answered, as JSON.
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  // WebAuthn needs a secure context and an RP ID that is a domain:
  // http://localhost is both.
  await page.goto(cfg.url + "/");
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });

  const result = await page.evaluate(async (token) => {
    const gql = async (query, variables, bearer) => {
      const headers = { "Content-Type": "application/json" };
      if (bearer) headers.Authorization = "Bearer " + bearer;
      const resp = await fetch("/query", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
      return resp.json();
    };
    const out = {};
    // Register.
    const reg = await gql("mutation { beginPasskeyRegistration { options state } }", {}, token);
    if (reg.errors) return { error: "beginPasskeyRegistration", errors: reg.errors };
    const creationOptions = JSON.parse(reg.data.beginPasskeyRegistration.options);
    const made = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(creationOptions.publicKey),
    });
    const fin = await gql(
      "mutation($s: String!, $c: String!) { finishPasskeyRegistration(state: $s, credential: $c, name: \"Test key\") { id name } }",
      { s: reg.data.beginPasskeyRegistration.state, c: JSON.stringify(made.toJSON()) },
      token,
    );
    out.registered = fin;
    // The same answer again: the ceremony's challenge is spent on the
    // passkey registered already.
    out.registeredAgain = await gql(
      "mutation($s: String!, $c: String!) { finishPasskeyRegistration(state: $s, credential: $c) { id } }",
      { s: reg.data.beginPasskeyRegistration.state, c: JSON.stringify(made.toJSON()) },
      token,
    );

    // Sign in with it: no login, no password.
    const signIn = async () => {
      const begin = await gql("mutation { beginPasskeySignIn { options state } }", {});
      if (begin.errors) return begin;
      const requestOptions = JSON.parse(begin.data.beginPasskeySignIn.options);
      const got = await navigator.credentials.get({
        publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(requestOptions.publicKey),
      });
      return gql(
        "mutation($s: String!, $c: String!) { finishPasskeySignIn(state: $s, credential: $c, device: \"Browser with a passkey\") { token refreshToken user { login } } }",
        { s: begin.data.beginPasskeySignIn.state, c: JSON.stringify(got.toJSON()) },
      );
    };
    out.signedIn = await signIn();
    out.signedInAgain = await signIn();
    out.passkeys = await gql("{ passkeys { id name createdAt lastUsedAt } }", {}, token);
    // Deleted, it signs in no more (the authenticator still holds it).
    if (fin.data) {
      out.deleted = await gql("mutation($id: ID!) { deletePasskey(id: $id) }", { id: fin.data.finishPasskeyRegistration.id }, token);
    }
    out.afterDelete = await signIn();
    return out;
  }, cfg.token);
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  result.authenticatorCredentials = credentials.map((c) => ({ isResidentCredential: c.isResidentCredential, signCount: c.signCount }));
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}

/**
 * Which API key may use which app, as the router and the endpoint picker
 * decide it (router/src/app-access.ts, pure): an app with `spec.auth` takes
 * exactly its keys and the caller acts as the key's id; an app without takes
 * the front door's key file; no key or an unknown one is 401, a key the front
 * door knows but the app does not accept is 403; with no key file, apps that
 * name no keys are open. And the app a gateway request acts on, as the
 * picker finds it (its path, or an OpenAI `model`).
 */
import t, { type Test } from "tap";
import { apiKeyDigest, parseApiKeys } from "../../common/src/security/http-auth.js";
import { appKeyId, type AppConfig } from "../../common/src/protocol/index.js";
import { AppAccess } from "../../router/src/app-access.js";
import { HttpError } from "../../router/src/errors.js";
import { requestApp } from "../../router/src/picker/index.js";
import { appConfig } from "./fixtures.js";

const ALICE = "alice-key-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";
const OPS = "ops-key-0123456789abcdef";
const keyed = (ns: string, name: string, keys: Record<string, string>): AppConfig =>
  appConfig(name, { namespace: ns, auth: { keys: Object.entries(keys).map(([k, v]) => ({ id: appKeyId(ns, "api-keys", k), sha256: apiKeyDigest(v) })) } });
const a = keyed("team-a", "app", { alice: ALICE });
const b = keyed("team-b", "app", { bob: BOB });
const open = appConfig("open", { namespace: "team-a" });
const apps = [a, b, open];

function refused(t: Test, fn: () => unknown, status: number, pattern: RegExp, what: string): void {
  try {
    fn();
    t.fail(`${what}: expected ${status}`);
  } catch (err) {
    t.ok(err instanceof HttpError, what);
    t.equal((err as HttpError).status, status, what);
    t.match((err as HttpError).message, pattern, what);
    if (status === 401) t.match((err as HttpError).headers["WWW-Authenticate"], /^Bearer/);
  }
}

t.test("with the router's key file", async (t) => {
  const access = new AppAccess(parseApiKeys(`ops:${OPS}`), () => apps);
  t.equal(access.principal(a, `Bearer ${ALICE}`), "secret:team-a/api-keys/alice", "an app key acts as its key id");
  t.equal(access.principal(open, `Bearer ${OPS}`), "ops", "an app with no spec.auth takes the key file");
  refused(t, () => access.principal(a, undefined), 401, /missing credentials/, "no key");
  refused(t, () => access.principal(a, "Basic abc"), 401, /Bearer <API key>/, "not a bearer token");
  refused(t, () => access.principal(a, "Bearer nobody-knows-it-0123"), 401, /not a known API key/, "an unknown key");
  refused(t, () => access.principal(a, `Bearer ${BOB}`), 403, /may not use AgentApp team-a\/app/, "tenant B's key on tenant A's app");
  refused(t, () => access.principal(a, `Bearer ${OPS}`), 403, /not in the Secrets/, "the key file's key on an app with its own keys");
  refused(t, () => access.principal(open, `Bearer ${ALICE}`), 403, /another app's spec.auth/, "an app key on an app that names none");
  refused(t, () => access.principal(undefined, `Bearer ${ALICE}`), 403, /scoped to AgentApps/, "an app key on a route of no app");
  t.equal(access.principal(undefined, `Bearer ${OPS}`), "ops", "the key file's key on a route of no app");
});

t.test("with no key file: apps that name no keys are open, apps that do still take only theirs", async (t) => {
  const access = new AppAccess(null, () => apps);
  t.equal(access.principal(open, undefined), "anonymous");
  t.equal(access.principal(undefined, undefined), "anonymous");
  refused(t, () => access.principal(a, undefined), 401, /missing credentials/, "no key on an app with keys");
  refused(t, () => access.principal(a, `Bearer ${BOB}`), 403, /may not use AgentApp team-a\/app/, "another app's key");
  t.equal(access.principal(a, `Bearer ${ALICE}`), "secret:team-a/api-keys/alice");
});

t.test("the app a gateway request acts on (the picker checks its keys)", async (t) => {
  const ctx = { pool: { namespace: "team-a", name: "pool" }, app: (ns: string, name: string) => apps.find((x) => x.namespace === ns && x.name === name) };
  const req = (method: string, path: string, body?: unknown) => ({ method, path, headers: {}, body });
  t.equal(requestApp(req("POST", "/v1/apps/team-a/app/sessions", {}), ctx), a, "by its path");
  t.equal(requestApp(req("GET", "/v1/apps/team-a/app/sessions/x/events?y=1"), ctx), a, "with a query");
  t.equal(requestApp(req("POST", "/v1/chat/completions", { model: "app" }), ctx), a, "an OpenAI model naming an app of the pool's namespace");
  t.equal(requestApp(req("POST", "/v1/chat/completions", { model: "team-b/app" }), ctx), b, "or ns/app");
  t.equal(requestApp(req("POST", "/v1/chat/completions", { model: "qwen" }), ctx), undefined, "any other model: no app");
  t.equal(requestApp(req("GET", "/v1/apps/%E0%A4%A/x"), ctx), undefined, "a malformed segment: none (routeRequest answers 400)");
});

t.test("a key rotated in its Secret: the old value acts as the same key id within its window, 401 after", async (t) => {
  const NEXT = "alice-key-rotated-0123456789";
  const rotated = (validUntil: number): AppConfig =>
    appConfig("app", { namespace: "team-a", auth: { keys: [{ id: appKeyId("team-a", "api-keys", "alice"), sha256: apiKeyDigest(NEXT), previous: { sha256: apiKeyDigest(ALICE), validUntil } }] } });
  const inGrace = rotated(Date.now() + 60_000);
  const access = new AppAccess(null, () => [inGrace, b]);
  t.equal(access.principal(inGrace, `Bearer ${NEXT}`), "secret:team-a/api-keys/alice", "the new value");
  t.equal(access.principal(inGrace, `Bearer ${ALICE}`), "secret:team-a/api-keys/alice", "the old value, within the window: the same key id (it keeps what it owns)");
  refused(t, () => access.principal(b, `Bearer ${ALICE}`), 403, /may not use AgentApp team-b\/app/, "the old value is still only team-a's");
  const expired = rotated(Date.now() - 1);
  const after = new AppAccess(null, () => [expired, b]);
  t.equal(after.principal(expired, `Bearer ${NEXT}`), "secret:team-a/api-keys/alice");
  refused(t, () => after.principal(expired, `Bearer ${ALICE}`), 401, /not a known API key/, "the old value after its window: nobody's key");
});

/**
 * API keys that mean something (AgentApp `spec.auth`), end to end: a real
 * etcd + kube-apiserver, the operator under the chart's ServiceAccount
 * publishing app configs to a real nats-server, a router with its own key
 * file and owner-tag key, and a real engine on the generated `test` model.
 * Two tenants (team-a, team-b), each with an AgentApp naming its own Secret
 * of keys; team-a's Secret holds two keys (alice, carol), team-b's one (bob).
 *
 * - a Secret or key an app names that does not exist is a Degraded reason,
 *   and the routers do not serve the app until it exists;
 * - no key, or a key nobody knows: 401; tenant B's key (or the router's own
 *   key file's) on tenant A's app: 403 on every route; A's keys work there;
 * - a session, program or response belongs to the key that created it:
 *   another key — of the same app, or B's through its own app — gets 403 on
 *   reads, event streams, input items, continuations and deletes; the
 *   stored response names its key id in the shared bucket, and the engine
 *   refuses it to another key too;
 * - a new value under the same Secret key takes effect with no restart: the
 *   new one works and still owns what the old one created (the key id is
 *   the same); the old value keeps working for the grace window (the
 *   operator's default, 10 min), and gets 401 once it ends; with the
 *   Secret's `interlace.dev/key-grace-seconds: "0"` it gets 401 at once.
 *
 * The rows of README "Security" → the attack table that concern API keys.
 */
import t from "tap";
import OpenAI from "openai";
import type { V1Secret } from "@kubernetes/client-node";
import { startNatsServer } from "../helpers/nats-server.js";
import { AgentAppKind, EnginePoolKind, Reason, type AgentApp, type EnginePool } from "../../operator/src/api/index.js";
import { CoreTypes } from "../../operator/src/runtime/index.js";
import { startRouter } from "../../router/src/index.js";
import { routerOptions } from "../../router/src/config.js";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { onBehalfOf, parseApiKeys } from "../../common/src/security/http-auth.js";
import { RESPONSES_BUCKET } from "../../common/src/protocol/index.js";
import { parseRoutedResponseId } from "../../router/src/session-id.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { eventually } from "../helpers/wait.js";
import { log, QUICK } from "../router/fixtures.js";
import { KEY_GRACE_ANNOTATION } from "../../operator/src/resources/index.js";
import { condition, operatorAccount, startOperatorStack, startTestOperator, testLogger, waitFor } from "./helpers.js";

t.setTimeout(400_000);
const A = "team-a";
const B = "team-b";
const ALICE = "alice-key-0123456789abcdef";
const CAROL = "carol-key-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";
const OPS = "ops-key-0123456789abcdef"; // the router's own key file: for apps that name no Secret
const ALICE_NEXT = "alice-key-rotated-0123456789";
const ALICE_THIRD = "alice-key-third-0123456789";
const ALICE_FOURTH = "alice-key-fourth-0123456789";

const nats = await startNatsServer(t);
const OPERATOR_ARGV = ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url];
const stack = await startOperatorStack(t, A, OPERATOR_ARGV);
const { admin } = stack;
await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: B } });

const secret = (ns: string, keys: Record<string, string>): V1Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "api-keys", namespace: ns },
  // A trailing newline, as `kubectl create secret --from-file` leaves it: the key is the value without it.
  data: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(`${v}\n`).toString("base64")])),
});
const SUMMARIZE = { name: "summarize", template: "Summarize: {{input:text}}\nSummary: {{output:summary}}", outputs: [{ name: "summary", maxTokens: 4 }] };
const agentApp = (ns: string, name: string, auth?: AgentApp["spec"]["auth"]): AgentApp => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "AgentApp",
  metadata: { name, namespace: ns },
  spec: { enginePool: { name: "pool" }, systemPrompt: "You help.", maxTokens: 16, semanticFunctions: [SUMMARIZE], ...(auth !== undefined ? { auth } : {}) },
});
for (const ns of [A, B]) {
  await admin.create<EnginePool>(EnginePoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "pool", namespace: ns },
    spec: { model: { path: "/models/m.gguf" }, runtime: { backend: "llama-cpp" } },
  });
}

const router = await startRouter(
  routerOptions({ natsUrl: nats.url, maxBodyBytes: 65_536, upstreamTimeoutMs: 20_000, presenceMs: 500, logLevel: "silent", security: { apiKeys: parseApiKeys(`ops:${OPS}`), ownerTagKey: "o".repeat(64), nats: {} } }),
  log,
);
t.teardown(() => router.close());
const base = `http://127.0.0.1:${router.port}`;
const appUrl = (ns: string, name = "app"): string => `${base}/v1/apps/${ns}/${name}`;
const call = async (method: string, url: string, key?: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> => {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["authorization"] = `Bearer ${key}`;
  const res = await fetch(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, json: text.startsWith("{") ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers };
};
const status = async (method: string, url: string, key?: string, body?: unknown): Promise<number> => (await call(method, url, key, body)).status;
const getApp = (ns: string, name: string): Promise<AgentApp | null> => admin.get<AgentApp>(AgentAppKind, ns, name);
const degradedReason = async (ns: string, name: string): Promise<string | undefined> => {
  const c = condition(await getApp(ns, name), "Degraded");
  return c?.status === "True" ? c.reason : undefined;
};

// A real engine serves team-a's pool (what the rows below create runs there).
const engine = await spawnEngine(
  ["--model-preset", "test", "--sequences", "4", "--context-size", "2048", "--executor", "nats", "--nats-url", nats.url, "--pool", `${A}/pool`, "--pod-name", "pool-engine-0", "--heartbeat-ms", "250"],
  { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 90_000 },
);
t.teardown(() => engine.stop());
await waitFor("the router sees the engine", async () => router.engines.loads(A, "pool").length === 1);
t.test("a Secret or key the app names that does not exist: a status reason, and no router serves the app", async (t) => {
  await admin.create<AgentApp>(AgentAppKind, agentApp(A, "app", { apiKeySecrets: [{ name: "api-keys" }] }));
  await admin.create<AgentApp>(AgentAppKind, agentApp(B, "app", { apiKeySecrets: [{ name: "api-keys" }] }));
  await admin.create<AgentApp>(AgentAppKind, agentApp(A, "partial", { apiKeySecrets: [{ name: "api-keys", key: "dave" }] }));
  await admin.create<AgentApp>(AgentAppKind, agentApp(A, "open"));
  await waitFor("ApiKeySecretNotFound", async () => (await degradedReason(A, "app")) === Reason.ApiKeySecretNotFound);
  t.match(condition(await getApp(A, "app"), "Degraded"), { reason: "ApiKeySecretNotFound" }, "the reason on the AgentApp");
  await waitFor("the open app served", async () => router.apps.get(A, "open") !== undefined);
  t.equal(router.apps.get(A, "app"), undefined, "the router does not serve an app whose keys it cannot have");
  t.equal(await status("GET", appUrl(A), OPS), 404, "so no key may use it");

  await admin.create(CoreTypes.Secret, secret(A, { alice: ALICE, carol: CAROL }));
  await admin.create(CoreTypes.Secret, secret(B, { bob: BOB }));
  await waitFor("the apps served with their keys", async () => router.apps.get(A, "app")?.config.auth?.keys.length === 2 && router.apps.get(B, "app") !== undefined);
  t.same(
    router.apps.get(A, "app")?.config.auth?.keys.map((k) => k.id),
    [`secret:${A}/api-keys/alice`, `secret:${A}/api-keys/carol`],
    "one id per key of the Secret",
  );
  t.notMatch(JSON.stringify(router.apps.get(A, "app")?.config), ALICE, "the key itself never leaves the Secret");
  await waitFor("ApiKeyNotFound", async () => (await degradedReason(A, "partial")) === Reason.ApiKeyNotFound);
  t.match(condition(await getApp(A, "partial"), "Degraded")?.reason, "ApiKeyNotFound", "a key the Secret lacks: its own reason");
  t.equal(await degradedReason(A, "app"), undefined, "team-a's app: no longer degraded once its Secret exists");
});

const sdk = (key: string, ns = A): OpenAI => new OpenAI({ baseURL: appUrl(ns), apiKey: key, maxRetries: 0 });

let aliceSession = "";
let aliceProgram = "";
let aliceResponse = "";

t.test("no key: 401; a key nobody knows: 401; tenant B's key on tenant A's app: 403; A's keys work", async (t) => {
  for (const [method, path] of [["GET", ""], ["POST", "/sessions"], ["POST", "/chat/completions"], ["POST", "/responses"], ["POST", "/programs"], ["GET", "/programs/p-x"], ["GET", "/responses/r-x"]] as const) {
    const none = await call(method, `${appUrl(A)}${path}`, undefined, method === "POST" ? {} : undefined);
    t.equal(none.status, 401, `${method} ${path || "/"} without a key: 401`);
    t.match(none.headers.get("www-authenticate"), /^Bearer/);
    t.equal(await status(method, `${appUrl(A)}${path}`, "nobody-knows-this-key-0123", method === "POST" ? {} : undefined), 401, `${method} ${path || "/"} with an unknown key: 401`);
    const foreign = await call(method, `${appUrl(A)}${path}`, BOB, method === "POST" ? {} : undefined);
    t.equal(foreign.status, 403, `${method} ${path || "/"} with tenant B's key: 403`);
    t.match(foreign.json, { error: { code: "forbidden", message: /may not use AgentApp team-a\/app/ } });
    t.equal(await status(method, `${appUrl(A)}${path}`, OPS, method === "POST" ? {} : undefined), 403, `${method} ${path || "/"} with the router's key-file key: 403 (the app names its own keys)`);
  }
  // Through the official SDK, as a client sees it.
  const denied = await sdk(BOB).chat.completions.create({ model: "app", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }).catch((e: unknown) => e);
  t.ok(denied instanceof OpenAI.PermissionDeniedError, "the SDK reports tenant B's key as permission denied");
  const unknown = await sdk("nobody-knows-this-key-0123").chat.completions.create({ model: "app", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }).catch((e: unknown) => e);
  t.ok(unknown instanceof OpenAI.AuthenticationError, "and an unknown key as an authentication error");

  // An app that names no Secret takes the router's key file, and no app's keys.
  t.equal(await status("GET", appUrl(A, "open"), OPS), 200, "the key file's key on an app with no spec.auth");
  t.equal(await status("GET", appUrl(A, "open"), ALICE), 403, "an app key is scoped to its apps");

  // A's keys on A's app: every route.
  t.equal(await status("GET", appUrl(A), ALICE), 200, "GET the app");
  const chat = await sdk(ALICE).chat.completions.create({ model: "app", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
  t.ok(chat.choices.length > 0, "a chat completion");
  const response = await sdk(ALICE).responses.create({ model: "app", input: "hi", max_output_tokens: 4 });
  t.match(response.id, /^resp_/, `a response (${response.status})`);
  aliceResponse = response.id;
  const session = await call("POST", `${appUrl(A)}/sessions`, ALICE, QUICK);
  t.equal(session.status, 201, "a session");
  aliceSession = String(session.json["id"]);
  const program = await call("POST", `${appUrl(A)}/programs`, ALICE, { inputs: { t: "the sky is blue" }, calls: [{ function: "summarize", inputs: { text: "t" }, outputs: { summary: "s" } }] });
  t.equal(program.status, 201, "a program");
  aliceProgram = String(program.json["id"]);
  t.equal(await status("GET", `${appUrl(A)}/programs/${aliceProgram}`, ALICE), 200, "its creator reads the program");
});

t.test("a session, program or response belongs to the key that created it: any other key gets 403", async (t) => {
  const reads: [string, string, unknown?][] = [
    ["GET", `/sessions/${aliceSession}/events`],
    ["POST", `/sessions/${aliceSession}/interrupts`, { kind: "user", value: "stop" }],
    ["DELETE", `/sessions/${aliceSession}`],
    ["GET", `/programs/${aliceProgram}`],
    ["GET", `/programs/${aliceProgram}/events`],
    ["GET", `/variables/${aliceProgram}.s`],
    ["POST", `/programs/${aliceProgram}/calls`, { calls: [{ function: "summarize", inputs: { text: "t" }, outputs: { summary: "s2" } }] }],
    ["DELETE", `/programs/${aliceProgram}`],
    ["GET", `/responses/${aliceResponse}`],
    ["GET", `/responses/${aliceResponse}/input_items`],
    ["POST", `/responses/${aliceResponse}/cancel`],
    ["DELETE", `/responses/${aliceResponse}`],
  ];
  for (const [method, path, body] of reads) {
    t.equal(await status(method, `${appUrl(A)}${path}`, CAROL, body), 403, `${method} ${path} with another key of the same app: 403`);
    t.equal(await status(method, `${appUrl(A)}${path}`, BOB, body), 403, `${method} ${path} with tenant B's key: 403`);
  }
  const continued = await sdk(CAROL).responses.create({ model: "app", previous_response_id: aliceResponse, input: "and then?" }).catch((e: unknown) => e);
  t.ok(continued instanceof OpenAI.PermissionDeniedError, "continuing another key's response (previous_response_id): 403");
  // Tenant B through its own app, replaying A's ids.
  t.equal(await status("GET", `${appUrl(B)}/sessions/${aliceSession}/events`, BOB), 403, "A's session id through B's app: 403");
  t.equal(await status("GET", `${appUrl(B)}/responses/${aliceResponse}`, BOB), 403, "A's response id through B's app: 403");
  const replayed = await sdk(BOB, B).responses.create({ model: "app", previous_response_id: aliceResponse, input: "and then?" }).catch((e: unknown) => e);
  t.ok(replayed instanceof OpenAI.PermissionDeniedError, "A's response as previous_response_id on B's app: 403");
  t.equal(await status("GET", `${appUrl(B)}/programs/${aliceProgram}`, BOB), 404, "A's program through B's app: not B's app's program (404)");
  // The stored response itself carries its creator's key id, and the engine checks it too (behind the router's owner tag).
  const engineId = parseRoutedResponseId(aliceResponse)!.engineSessionId;
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const entry = await (await new Kvm(nc).open(RESPONSES_BUCKET)).get(`${A}.${engineId}`);
  t.equal(entry?.json<{ owner?: string }>().owner, `secret:${A}/api-keys/alice`, "the shared bucket's record names alice's key id");
  const onEngine = (keyId: string): Promise<number> => fetch(`${engine.url}/v1/responses/${engineId}`, { headers: onBehalfOf(keyId) }).then(async (r) => (await r.arrayBuffer(), r.status));
  t.equal(await onEngine(`secret:${B}/api-keys/bob`), 403, "the engine refuses it on behalf of another key");
  t.equal(await onEngine(`secret:${A}/api-keys/alice`), 200, "and serves it on behalf of alice's (control)");
  // Nothing was changed by the refused calls.
  t.equal(await status("GET", `${appUrl(A)}/responses/${aliceResponse}`, ALICE), 200, "alice still reads her response");
  t.equal(await status("GET", `${appUrl(A)}/programs/${aliceProgram}`, ALICE), 200, "and her program");
});

t.test("rotating a key in its Secret: no restart, the same key id; the old value works for the grace window, then 401; grace 0 revokes at once", async (t) => {
  const b64 = (v: string): string => Buffer.from(v).toString("base64");
  const aliceKey = () => router.apps.get(A, "app")?.config.auth?.keys.find((k) => k.id === `secret:${A}/api-keys/alice`);
  await admin.mergePatch(CoreTypes.Secret, A, "api-keys", { data: { alice: b64(ALICE_NEXT) } });
  t.ok(await eventually(async () => (await status("GET", appUrl(A), ALICE_NEXT)) === 200, 30_000), "the new value works");
  t.ok((aliceKey()?.previous?.validUntil ?? 0) > Date.now() + 500_000, "the routers hold the old value's digest with a 10 min window (the operator's default)");
  t.equal(await status("GET", appUrl(A), ALICE), 200, "the old value still works within the window");
  t.equal(await status("GET", `${appUrl(A)}/responses/${aliceResponse}`, ALICE), 200, "as the same key: it still reads alice's response");
  t.equal(await status("GET", `${appUrl(A)}/responses/${aliceResponse}`, BOB), 403, "which stays nobody else's");
  t.equal(await status("GET", appUrl(A), CAROL), 200, "the Secret's other key is untouched");
  t.equal(await status("GET", `${appUrl(A)}/responses/${aliceResponse}`, ALICE_NEXT), 200, "the rotated key still owns the response (same key id)");
  t.equal(await status("GET", `${appUrl(A)}/programs/${aliceProgram}`, ALICE_NEXT), 200, "and the program");
  t.not(await status("GET", `${appUrl(A)}/sessions/${aliceSession}/events`, ALICE_NEXT), 403, "and the session");

  // A new operator (a restart, or another replica taking the lease) keeps the window: it reads the published digests back.
  await stack.operator.stop();
  const successor = startTestOperator(OPERATOR_ARGV, await operatorAccount(stack.cp, "interlace-system", "interlace"), testLogger("operator-2"));
  t.teardown(() => successor.stop());
  await successor.start();
  await admin.mergePatch(AgentAppKind, A, "app", { spec: { maxTokens: 17 } });
  t.ok(await eventually(() => router.apps.get(A, "app")?.config.maxTokens === 17, 30_000), "the new operator has published the app again");
  t.ok(aliceKey()?.previous !== undefined, "with the old value's digest still in its window");
  t.equal(await status("GET", appUrl(A), ALICE), 200, "so the old value still works");

  // A leaked key: the new value written with the Secret's grace at 0 refuses every earlier value at once.
  await admin.mergePatch(CoreTypes.Secret, A, "api-keys", { metadata: { annotations: { [KEY_GRACE_ANNOTATION]: "0" } }, data: { alice: b64(ALICE_THIRD) } });
  t.ok(await eventually(async () => (await status("GET", appUrl(A), ALICE_THIRD)) === 200, 30_000), "grace 0: the new value works");
  t.equal(aliceKey()?.previous, undefined, "no previous digest is published");
  t.equal(await status("GET", appUrl(A), ALICE_NEXT), 401, "the value it replaced is refused at once");
  t.equal(await status("GET", appUrl(A), ALICE), 401, "and the one still in the earlier window");

  // A short window: the old value works until it ends, then is refused (the routers' clock: nothing else changes).
  await admin.mergePatch(CoreTypes.Secret, A, "api-keys", { metadata: { annotations: { [KEY_GRACE_ANNOTATION]: "15" } }, data: { alice: b64(ALICE_FOURTH) } });
  t.ok(await eventually(async () => (await status("GET", appUrl(A), ALICE_FOURTH)) === 200, 30_000), "the new value works");
  const ends = aliceKey()?.previous?.validUntil ?? 0;
  t.ok(ends > Date.now() && ends <= Date.now() + 15_000, "the Secret's 15 s window is published");
  t.equal(await status("GET", appUrl(A), ALICE_THIRD), 200, "the old value works within it");
  await new Promise((r) => setTimeout(r, Math.max(0, ends - Date.now()) + 100));
  t.equal(await status("GET", appUrl(A), ALICE_THIRD), 401, "and is refused once it ends");
  t.equal(await status("GET", `${appUrl(A)}/responses/${aliceResponse}`, ALICE_FOURTH), 200, "the current value still owns alice's response");
  t.ok(await eventually(() => aliceKey() !== undefined && aliceKey()!.previous === undefined, 15_000), "the operator drops the ended window from the config");

  await admin.delete(CoreTypes.Secret, A, "api-keys");
  await waitFor("ApiKeySecretNotFound after deletion", async () => (await degradedReason(A, "app")) === Reason.ApiKeySecretNotFound);
  t.ok(await eventually(() => router.apps.get(A, "app") === undefined, 10_000), "a deleted Secret withdraws the app: fail closed");
  t.equal(await status("GET", appUrl(A), ALICE_FOURTH), 401, "its keys are nobody's now: 401");
  t.equal(await status("GET", appUrl(A), OPS), 404, "and no other key reaches it");
});

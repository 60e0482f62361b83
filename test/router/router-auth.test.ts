/**
 * The router with authentication on, against a real nats-server secured as
 * the chart secures it (JWT identities, TLS), a real engine process (NATS
 * executor, its own identity, API keys and interrupt key from its
 * environment) and a real tool runner: clients without a key or with an
 * unknown one get 401; a session is owned by the key that opened it, so
 * another key gets 403 on its events, interrupts and cancel; the owner's
 * user interrupt reaches the engine (over its HTTP API, with the router's
 * key) and is injected, and one sent after the session ended is refused to
 * the client; the engine itself takes only the router's key.
 */
import t from "tap";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket } from "../../common/src/protocol/index.js";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import { natsConnectOptions } from "../../common/src/security/nats-connect.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { createNatsSecurity, natsClientSecurity, removeNatsSecurity } from "../../hack/nats.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter } from "../../router/src/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { poolConfig, startRunner } from "../nats/fixtures.js";
import { appConfig, log, POOL } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(180_000);

const INTERRUPT_KEY = "i".repeat(64);
const OWNER_TAG_KEY = "o".repeat(64);
const ENGINE_KEY = "router-to-engine-key-0123456789";
const ALICE = "alice-key-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";

const sec = await createNatsSecurity();
t.teardown(() => removeNatsSecurity(sec));
const nats = await startNatsServer(t, { security: sec });

// The operator's identity writes the app config, as in a cluster.
const opNc = await connect({ servers: nats.url, ...natsConnectOptions(await natsClientSecurity(sec, { kind: "operator" })) });
t.teardown(() => opNc.close());
const alpha = appConfig("alpha");
await (await openAppsBucket(opNc)).put(appKey(alpha.namespace, alpha.name), JSON.stringify(alpha));

await startRunner(t, nats.url, poolConfig(), { security: await natsClientSecurity(sec, { kind: "runner", namespace: "default", pool: "tools" }) });

const engineCreds = join(sec.dir, "engine.creds");
const interruptKeyFile = join(sec.dir, "interrupt.key");
writeFileSync(interruptKeyFile, INTERRUPT_KEY, { mode: 0o600 });
writeFileSync(engineCreds, (await natsClientSecurity(sec, { kind: "engine", namespace: "default", pod: "engine-a" })).creds!, { mode: 0o600 });
const engine = await spawnEngine(
  ["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--executor", "nats", "--default-pool", "default/tools", "--nats-url", nats.url, "--pool", `default/${POOL}`, "--pod-name", "engine-a", "--heartbeat-ms", "250"],
  {
    env: {
      LOG_LEVEL: "info",
      INTERLACE_NATS_CREDS: engineCreds,
      INTERLACE_NATS_CA: sec.tls!.caFile,
      INTERLACE_INTERRUPT_KEY_FILE: interruptKeyFile,
      INTERLACE_API_KEYS: `router:${ENGINE_KEY}`,
    },
    readyTimeoutMs: 90_000,
  },
);
t.teardown(() => engine.stop());

const router = await startRouter(
  routerOptions({
    natsUrl: nats.url,
    maxBodyBytes: 65_536,
    upstreamTimeoutMs: 20_000,
    presenceMs: 500,
    logLevel: "silent",
    security: {
      apiKeys: parseApiKeys(`alice:${ALICE}\nbob:${BOB}`),
      ownerTagKey: OWNER_TAG_KEY,
      engineApiKey: ENGINE_KEY,
      nats: await natsClientSecurity(sec, { kind: "router" }),
    },
  }),
  log.child({ router: 0 }),
);
t.teardown(() => router.close());
t.ok(await eventually(() => router.engines.loads("default", POOL).length === 1 && router.apps.get("default", "alpha") !== undefined, 20_000), "the router sees the engine and the app over authenticated NATS");
const base = `http://127.0.0.1:${router.port}/v1/apps/default/alpha`;

const call = (path: string, key: string | null, init: RequestInit = {}): Promise<Response> =>
  fetch(`${base}${path}`, { ...init, headers: { "content-type": "application/json", ...(key !== null ? { authorization: `Bearer ${key}` } : {}), ...(init.headers as Record<string, string> | undefined) } });
const errorOf = async (res: Response): Promise<{ code: string; message: string }> => ((await res.json()) as { error: { code: string; message: string } }).error;

// Ready only once the user interrupt `u1` is injected: the session waits for it.
const WAITS_FOR_U1 = {
  prompt: "Wait for my go.",
  policy: { type: "lpt-dag", calls: [{ id: "after", tool: "sleep", arguments: { ms: 1 }, dependsOn: [], estimatedLatencyMs: 1, afterInterrupt: "u1" }], finalText: "ok" },
};

t.test("no key or an unknown key: 401 with a reason", async (t) => {
  const none = await call("/sessions", null, { method: "POST", body: JSON.stringify(WAITS_FOR_U1) });
  t.equal(none.status, 401);
  t.match(none.headers.get("www-authenticate"), /^Bearer/);
  t.match(await errorOf(none), { code: "unauthorized", message: /Authorization: Bearer/ });
  const wrong = await call("/sessions", "not-a-key-of-anyone-here", { method: "POST", body: JSON.stringify(WAITS_FOR_U1) });
  t.equal(wrong.status, 401);
  t.match(await errorOf(wrong), { code: "unauthorized", message: /not a known API key/ });
  const meta = await call("", null);
  t.equal(meta.status, 401, "every /v1 route needs a key");
  const probe = await fetch(`http://127.0.0.1:${router.port}/healthz`);
  t.equal(probe.status, 200, "probes stay open");
});

t.test("a session is its opener's: another key gets 403; the owner's interrupt reaches the engine", async (t) => {
  const opened = await call("/sessions", ALICE, { method: "POST", body: JSON.stringify(WAITS_FOR_U1) });
  t.equal(opened.status, 201, await opened.clone().text());
  const { id } = (await opened.json()) as { id: string };
  t.match(id, /^engine-a\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/, "the id carries its owner tag");

  for (const [what, res] of [
    ["events", await call(`/sessions/${id}/events`, BOB)],
    ["interrupt", await call(`/sessions/${id}/interrupts`, BOB, { method: "POST", body: JSON.stringify({ value: "hijack", id: "u1" }) })],
    ["cancel", await call(`/sessions/${id}`, BOB, { method: "DELETE" })],
  ] as const) {
    t.equal(res.status, 403, `bob's ${what}`);
    t.match(await errorOf(res), { code: "forbidden", message: /belongs to another API key/ });
  }
  const forgedTag = `${id.slice(0, id.lastIndexOf(".") + 1)}${"A".repeat(22)}`;
  t.equal((await call(`/sessions/${forgedTag}/interrupts`, BOB, { method: "POST", body: JSON.stringify({ value: "x" }) })).status, 403, "a made-up tag is refused");
  const untagged = id.slice(0, id.lastIndexOf("."));
  t.equal((await call(`/sessions/${untagged}/interrupts`, ALICE, { method: "POST", body: JSON.stringify({ value: "x" }) })).status, 403, "an id without its tag is refused, even for the owner");

  const res = await call(`/sessions/${id}/events`, ALICE, { headers: { accept: "text/event-stream" } });
  t.equal(res.status, 200);
  const events: SessionEvent[] = [];
  const streamed = (async () => {
    for await (const e of readEventStream<SessionEvent>(res.body!)) events.push(e);
  })();
  const intr = await call(`/sessions/${id}/interrupts`, ALICE, { method: "POST", body: JSON.stringify({ value: "go", id: "u1" }) });
  t.equal(intr.status, 202, await intr.clone().text());
  t.match(await intr.json(), { id: "u1", kind: "user", sessionId: id, engine: "engine-a" });
  await streamed;
  t.ok(events.some((e) => e.type === "interrupt" && e.kind === "user" && e.id === "u1"), "the owner's interrupt was injected (and bob's was not)");
  t.notOk(events.some((e) => e.type === "interrupt" && JSON.stringify(e).includes("hijack")), "bob's interrupt never reached the session");
  t.equal(events.at(-1)?.type, "done");
  // The engine answers the router at once, so the client learns the interrupt was not taken.
  const late = await call(`/sessions/${id}/interrupts`, ALICE, { method: "POST", body: JSON.stringify({ value: "too late" }) });
  t.equal(late.status, 409, `an interrupt after done is refused to the client: ${await late.clone().text()}`);
});

t.test("the engine takes only the router's key", async (t) => {
  const heartbeat = router.engines.find("default", "engine-a")!;
  const asAlice = await fetch(`${heartbeat.endpoint}/v1/sessions`, { method: "POST", headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" }, body: "{}" });
  t.equal(asAlice.status, 401, "a client key is not an engine key");
  const anonymous = await fetch(`${heartbeat.endpoint}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  t.equal(anonymous.status, 401);
});

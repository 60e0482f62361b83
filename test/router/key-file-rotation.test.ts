/**
 * The engine API key and the router's client key file rotate with a grace
 * window, with no restart and no refused request: a real engine process
 * (NATS executor, its API keys from a file) and the router (every key from
 * files), against a real nats-server secured as the chart secures it. The
 * files are rewritten in place as the kubelet rewrites a mounted Secret
 * (`<file>`, `<file>.previous`, `<file>.previous.valid-until`).
 *
 * - The router reads a rotated engine key before the engine does (the
 *   kubelet syncs pods at different times): it presents the previous key
 *   until the window ends, so the engine, still on its old file, takes it.
 * - A client key file rotated in place: the new key works at once, the old
 *   one until the window ends, then 401; the engine refuses the old engine
 *   key after its window too.
 * - A session opened before both rotations keeps streaming and takes its
 *   owner's interrupt (sent with the new key) after the window.
 */
import t from "tap";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket } from "../../common/src/protocol/index.js";
import { ringOf, formatValidUntil } from "../../common/src/security/key-ring.js";
import { natsConnectOptions } from "../../common/src/security/nats-connect.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { createNatsSecurity, natsClientSecurity, removeNatsSecurity } from "../../hack/nats.js";
import { routerOptions, routerSecurityFromEnv } from "../../router/src/config.js";
import { startRouter } from "../../router/src/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { poolConfig, startRunner } from "../nats/fixtures.js";
import { appConfig, log, POOL } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(240_000);

const OLD_ENGINE_KEY = "router-to-engine-key-OLD-0123456789";
const NEW_ENGINE_KEY = "router-to-engine-key-NEW-0123456789";
const ALICE = "alice-key-0123456789abcdef";
const ALICE_NEW = "alice-key-NEW-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";

const sec = await createNatsSecurity();
t.teardown(() => removeNatsSecurity(sec));
const nats = await startNatsServer(t, { security: sec });
const dir = mkdtempSync(join(tmpdir(), "interlace-key-files-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** What the kubelet leaves after a rotation: the old contents beside the new, with the window's end. */
function rotateFile(file: string, next: string, validUntil: number): void {
  writeFileSync(`${file}.previous`, readFileSync(file, "utf8"), { mode: 0o600 });
  writeFileSync(`${file}.previous.valid-until`, formatValidUntil(validUntil), { mode: 0o600 });
  writeFileSync(file, next, { mode: 0o600 });
}

const opNc = await connect({ servers: nats.url, ...natsConnectOptions(await natsClientSecurity(sec, { kind: "operator" })) });
t.teardown(() => opNc.close());
const alpha = appConfig("alpha");
await (await openAppsBucket(opNc)).put(appKey(alpha.namespace, alpha.name), JSON.stringify(alpha));
await startRunner(t, nats.url, poolConfig(), { security: await natsClientSecurity(sec, { kind: "runner", namespace: "default", pool: "tools" }) });

// The engine's mounted Secret: its NATS identity, interrupt key and the router's key as its one API key.
const engineKeys = join(dir, "engine-api-keys");
writeFileSync(engineKeys, `router:${OLD_ENGINE_KEY}\n`, { mode: 0o600 });
const engineCreds = join(dir, "engine.creds");
writeFileSync(engineCreds, (await natsClientSecurity(sec, { kind: "engine", namespace: "default", pod: "engine-a" })).creds!, { mode: 0o600 });
writeFileSync(join(dir, "interrupt.key"), "i".repeat(64), { mode: 0o600 });
const engine = await spawnEngine(
  ["--model-preset", "test", "--sequences", "8", "--context-size", "2048", "--executor", "nats", "--default-pool", "default/tools", "--nats-url", nats.url, "--pool", `default/${POOL}`, "--pod-name", "engine-a", "--heartbeat-ms", "250"],
  {
    env: {
      LOG_LEVEL: "info",
      INTERLACE_NATS_CREDS: engineCreds,
      INTERLACE_NATS_CA: sec.tls!.caFile,
      INTERLACE_INTERRUPT_KEY_FILE: join(dir, "interrupt.key"),
      INTERLACE_API_KEYS_FILE: engineKeys,
    },
    readyTimeoutMs: 90_000,
  },
);
t.teardown(() => engine.stop());

// The router's mounted Secrets: its key towards engines, its owner-tag key, and the clients' key file.
const routerEngineKey = join(dir, "engine-api.key");
writeFileSync(routerEngineKey, OLD_ENGINE_KEY, { mode: 0o600 });
writeFileSync(join(dir, "owner-tag.key"), "o".repeat(64), { mode: 0o600 });
const clientKeys = join(dir, "api-keys");
writeFileSync(clientKeys, `alice:${ALICE}\nbob:${BOB}\n`, { mode: 0o600 });
const fromFiles = routerSecurityFromEnv({
  INTERLACE_ENGINE_API_KEY_FILE: routerEngineKey,
  INTERLACE_OWNER_TAG_KEY_FILE: join(dir, "owner-tag.key"),
  INTERLACE_API_KEYS_FILE: clientKeys,
});
const security = { ...fromFiles, nats: await natsClientSecurity(sec, { kind: "router" }) };
const router = await startRouter(routerOptions({ natsUrl: nats.url, upstreamTimeoutMs: 20_000, presenceMs: 500, logLevel: "silent", security }), log.child({ router: 0 }));
t.teardown(() => router.close());
t.ok(await eventually(() => router.engines.loads("default", POOL).length === 1 && router.apps.get("default", "alpha") !== undefined, 20_000), "the router sees the engine and the app");
const base = `http://127.0.0.1:${router.port}/v1/apps/default/alpha`;
const call = (path: string, key: string, init: RequestInit = {}): Promise<Response> =>
  fetch(`${base}${path}`, { ...init, headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...(init.headers as Record<string, string> | undefined) } });
/** The engine's own answer to a key: 401 when it refuses it (anything else: it got past authentication). */
const engineStatus = async (key: string): Promise<number> => {
  const res = await fetch(`${engine.url}/v1/sessions/none/events`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
};

const WAITS_FOR_U1 = {
  prompt: "Wait for my go.",
  policy: { type: "lpt-dag", calls: [{ id: "after", tool: "sleep", arguments: { ms: 1 }, dependsOn: [], estimatedLatencyMs: 1, afterInterrupt: "u1" }], finalText: "ok" },
};
const open = async (key: string): Promise<Response> => call("/sessions", key, { method: "POST", body: JSON.stringify(WAITS_FOR_U1) });

t.test("engine key and client key file rotation: nothing refused during the window, the old keys refused after it, a live session kept", async (t) => {
  const opened = await open(ALICE);
  t.equal(opened.status, 201, "a session before the rotation (control)");
  const { id } = (await opened.json()) as { id: string };
  const stop = new AbortController();
  const stream = await call(`/sessions/${id}/events`, ALICE, { headers: { accept: "text/event-stream" }, signal: stop.signal });
  t.equal(stream.status, 200);
  const events: SessionEvent[] = [];
  const streamed = (async () => {
    for await (const e of readEventStream<SessionEvent>(stream.body!)) events.push(e);
  })().catch(() => undefined);

  const windowEnds = Date.now() + 30_000;
  // The router's Secret reaches its pod first; the engine is still on its old file.
  rotateFile(routerEngineKey, NEW_ENGINE_KEY, windowEnds);
  t.ok(await eventually(() => ringOf(security.engineApiKey!).current === NEW_ENGINE_KEY, 10_000), "the router reads the rotated engine key in place");
  t.equal(await engineStatus(NEW_ENGINE_KEY), 401, "the engine has not read the new key yet");
  const during = await open(ALICE);
  t.equal(during.status, 201, `a new session while the engine lags: the router presents the previous key, which it still takes (${await during.clone().text()})`);
  await during.body?.cancel();

  // Then the engine's and the clients' files rotate too.
  rotateFile(engineKeys, `router:${NEW_ENGINE_KEY}\n`, windowEnds);
  rotateFile(clientKeys, `alice:${ALICE_NEW}\nbob:${BOB}\n`, windowEnds);
  t.ok(await eventually(async () => (await engineStatus(NEW_ENGINE_KEY)) !== 401, 10_000), "the engine reads its rotated key file in place: the new key passes");
  t.not(await engineStatus(OLD_ENGINE_KEY), 401, "and the old one within the window");
  t.ok(await eventually(async () => (await call("", ALICE_NEW)).status === 200, 10_000), "the router reads its rotated client key file in place: alice's new key is known");
  const withOld = await open(ALICE);
  t.equal(withOld.status, 201, "alice's old key within the window");
  await withOld.body?.cancel();

  await new Promise((r) => setTimeout(r, Math.max(0, windowEnds - Date.now()) + 200));
  t.equal(await engineStatus(OLD_ENGINE_KEY), 401, "after the window the engine refuses the old engine key (its own clock)");
  const old = await open(ALICE);
  t.equal(old.status, 401, "and the router alice's old client key");
  const after = await open(ALICE_NEW);
  t.equal(after.status, 201, `the router presents the new engine key after the window (${await after.clone().text()})`);
  await after.body?.cancel();
  t.equal((await open(BOB)).status, 201, "an unchanged key keeps working");

  const intr = await call(`/sessions/${id}/interrupts`, ALICE_NEW, { method: "POST", body: JSON.stringify({ value: "go", id: "u1" }) });
  t.equal(intr.status, 202, `the session opened before both rotations takes its owner's interrupt, sent with the new key (${await intr.clone().text()})`);
  if (intr.status !== 202) stop.abort(); // the session would wait for u1 for ever
  await streamed;
  t.ok(events.some((e) => e.type === "interrupt" && e.id === "u1"), "injected");
  t.equal(events.at(-1)?.type, "done", "the stream opened before the rotations ran to its end");
});

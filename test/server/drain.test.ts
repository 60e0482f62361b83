/**
 * @module Scale down without loss, on the engine pod's entrypoint as the
 * Deployment runs it (a child process of `engine-pod/src/main.ts`): on
 * SIGTERM it drains — `/readyz` says not ready, a new session gets 503
 * `draining` with `Retry-After`, a live session runs to its normal end —
 * and exits 0 once none is left; a session that outlives `--drain-grace-ms`
 * ends with an `error` event saying why, then `done: cancelled`, and a
 * completion still running then fails with that reason (through the
 * official `openai` SDK, streaming and not).
 */
import OpenAI from "openai";
import t, { type Test } from "tap";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { waitFor } from "../helpers/wait.js";
import { postJson, readSession } from "./helpers.js";

const SLEEP = builtinToolSpecs().filter((s) => s.name === "sleep");

/** A session whose one call sleeps `ms`, then answers "done" (scripted: no sampling). */
function sleepingSession(ms: number): Record<string, unknown> {
  return {
    prompt: "Wait for the job.",
    tools: SLEEP,
    maxTokens: 400,
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms }, dependsOn: [], estimatedLatencyMs: ms }], finalText: "done" },
  };
}

async function startEngine(t: Test, graceMs: number): Promise<{ engine: EngineProcess; exit: Promise<number | null> }> {
  const engine = await spawnEngine(["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--drain-grace-ms", String(graceMs)], {
    env: { LOG_LEVEL: "info" },
    readyTimeoutMs: 90_000,
  });
  t.teardown(() => engine.stop());
  const exit = new Promise<number | null>((r) => engine.child.once("exit", (code) => r(code)));
  return { engine, exit };
}

async function openSession(url: string, body: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${url}/v1/sessions`, body);
  if (res.status !== 201) throw new Error(`open: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

t.test("SIGTERM drains: no new sessions, the live one finishes normally, then exit 0", async (t) => {
  const { engine, exit } = await startEngine(t, 120_000);
  const id = await openSession(engine.url, sleepingSession(6_000));
  let signalled = false;
  let refused: Response | undefined;
  let refusedBody: { error?: { code?: string; message?: string } } = {};
  let readyStatus = 0;
  const events = await readSession(engine.url, id, {
    onEvent: async (e) => {
      if (e.type !== "trap" || signalled) return;
      signalled = engine.child.kill("SIGTERM");
      // While the call sleeps the pod is draining: probes and new sessions say so.
      await waitFor("readyz to turn not ready", async () => (readyStatus = (await fetch(`${engine.url}/readyz`)).status) === 503);
      refused = await postJson(`${engine.url}/v1/sessions`, sleepingSession(10));
      refusedBody = (await refused.json()) as typeof refusedBody;
    },
  });
  t.ok(signalled, "SIGTERM sent while the session waited on its call");
  t.equal(readyStatus, 503, "/readyz says not ready while draining");
  t.equal(refused?.status, 503, "a new session is refused while draining");
  t.equal(refusedBody.error?.code, "draining");
  t.match(refusedBody.error?.message, /engine draining/);
  t.ok(Number(refused?.headers.get("retry-after")) >= 1, "with Retry-After");
  const done = events[events.length - 1];
  t.equal(done?.type === "done" ? done.reason : done?.type, "eos", "the session started before SIGTERM ended normally");
  t.notOk(events.some((e) => e.type === "error"), "no error event");
  t.equal(await exit, 0, "exited 0 after the last session");
});

t.test("a session that outlives the grace period ends with the reason, then exit 0", async (t) => {
  const { engine, exit } = await startEngine(t, 1_000);
  const id = await openSession(engine.url, sleepingSession(120_000));
  let signalled = false;
  const events = await readSession(engine.url, id, {
    onEvent: (e) => {
      if (e.type === "trap" && !signalled) signalled = engine.child.kill("SIGTERM");
    },
  });
  t.ok(signalled);
  const error = events.find((e) => e.type === "error");
  t.same(error?.type === "error" ? { code: error.code, message: error.message } : undefined, { code: "draining", message: "engine draining: grace period expired" }, "the client is told why");
  const done = events[events.length - 1];
  t.equal(done?.type === "done" ? done.reason : done?.type, "cancelled", "then done: cancelled");
  t.equal(await exit, 0);
});

t.test("completions still running when the grace period ends fail with the reason, streaming and not", async (t) => {
  const { engine, exit } = await startEngine(t, 0);
  const client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const long = { model: "test", messages: [{ role: "user" as const, content: "Talk." }], max_tokens: 1500 };
  const whole = client.chat.completions.create(long).then(
    () => undefined,
    (err: unknown) => err,
  );
  const stream = await client.chat.completions.create({ ...long, stream: true });
  let chunks = 0;
  let streamError: unknown;
  try {
    for await (const _chunk of stream) if (++chunks === 3) engine.child.kill("SIGTERM");
  } catch (err) {
    streamError = err;
  }
  t.ok(chunks >= 3, "the stream was running when SIGTERM came");
  t.ok(streamError instanceof OpenAI.APIError, "the stream ended with an error, not silently");
  t.match((streamError as Error).message, /engine draining: grace period expired/);
  const wholeError = await whole;
  t.ok(wholeError instanceof OpenAI.APIError, "the non-streaming completion failed");
  t.equal((wholeError as InstanceType<typeof OpenAI.APIError>).status, 503);
  t.match((wholeError as Error).message, /engine draining: grace period expired/);
  t.equal(await exit, 0);
});

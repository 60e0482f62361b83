/**
 * @module The engine pod's entrypoint as the Deployment runs it (a child
 * process of `engine-pod/src/main.ts`): it serves once ready, and on SIGTERM
 * with no drain grace period (drain.test.ts covers the drain) ends open
 * session streams with `done: cancelled` and exits 0. A bad flag
 * stops it at once with exit code 2 and a message naming the flag.
 */
import { spawn } from "node:child_process";
import t from "tap";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { postJson, readSession } from "./helpers.js";

t.test("SIGTERM ends open sessions as cancelled and exits 0", async (t) => {
  const engine = await spawnEngine(["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--drain-grace-ms", "0"], { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 60_000 });
  t.teardown(() => engine.stop());
  const exit = new Promise<number | null>((r) => engine.child.once("exit", (code) => r(code)));
  const res = await postJson(`${engine.url}/v1/sessions`, {
    prompt: "Wait.",
    tools: builtinToolSpecs().filter((s) => s.name === "sleep"),
    maxTokens: 400,
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
  });
  t.equal(res.status, 201);
  const { id } = (await res.json()) as { id: string };
  let signalled = false;
  const events = await readSession(engine.url, id, {
    onEvent: (e) => {
      if (e.type === "trap" && !signalled) signalled = engine.child.kill("SIGTERM");
    },
  });
  t.ok(signalled, "SIGTERM sent while the session was parked");
  const done = events[events.length - 1];
  t.equal(done?.type === "done" ? done.reason : done?.type, "cancelled", "the stream ended with done: cancelled");
  t.equal(await exit, 0, "clean exit");
});

t.test("a bad flag exits 2 naming it", async (t) => {
  const child = spawn(process.execPath, ["--import", "tsx", "engine-pod/src/main.ts", "--model-preset", "test", "--kv-policy", "sometimes"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  t.equal(code, 2);
  t.match(stderr, /--kv-policy \(KV_POLICY\): expected one of/);
});

/**
 * @module Ending work early: a streaming completion whose client goes away
 * stops decoding, and a graceful shutdown ends open session streams with
 * `done: cancelled`, then stops accepting connections.
 */
import t from "tap";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { postJson, readSession, sseFrames, startTestPod } from "./helpers.js";
import { waitFor } from "../helpers/wait.js";

const { base, pod } = await startTestPod(t);

t.test("a streaming completion stops decoding when its client disconnects", async (t) => {
  const before = pod.engine.stats().tokensDecoded;
  const abort = new AbortController();
  const res = await postJson(`${base}/v1/chat/completions`, { messages: [{ role: "user", content: "Talk." }], max_tokens: 1500, stream: true }, { signal: abort.signal });
  t.equal(res.status, 200);
  let chunks = 0;
  try {
    for await (const frame of sseFrames(res)) {
      if (frame.data !== "[DONE]" && ++chunks >= 3) break;
    }
  } finally {
    abort.abort();
  }
  await waitFor("the completion to end", () => pod.engine.stats().activeSessions === 0);
  const decoded = pod.engine.stats().tokensDecoded - before;
  t.ok(decoded < 1500, `decoding stopped early (${decoded} of 1500 tokens)`);
});

t.test("shutdown cancels open sessions, ends their streams, and stops accepting", async (t) => {
  const tools = builtinToolSpecs().filter((s) => s.name === "sleep");
  const res = await postJson(`${base}/v1/sessions`, {
    prompt: "Wait.",
    tools,
    maxTokens: 400,
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
  });
  const { id } = (await res.json()) as { id: string };
  let closing: Promise<void> | undefined;
  const events = await readSession(base, id, {
    onEvent: (e) => {
      if (e.type === "trap") closing ??= pod.close();
    },
  });
  t.ok(closing, "shutdown began while the session was parked");
  await closing;
  const done = events[events.length - 1];
  t.equal(done?.type, "done", "the stream ended with done");
  t.equal(done?.type === "done" ? done.reason : undefined, "cancelled");
  await t.rejects(fetch(`${base}/healthz`), "no longer accepting connections");
});

/**
 * The `openai` backend (over llama.cpp's server from llama-cpp-python on the
 * generated `test` model, the builtin tools on an in-process executor)
 * through the Engine conformance suite: sync, syncParallel and asyncNaive;
 * async is refused with its reason. The model's input is what the engine
 * sent upstream (every request's messages, observed as they go out).
 */
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { ASYNC_NEEDS_OWN_ENGINE, UpstreamEngine } from "../../engine-pod/src/upstream/index.js";
import { UpstreamServer } from "../../hack/upstream-server.js";
import { engineConformance } from "../engine/conformance.js";

t.test("openai backend over llama.cpp's server", async (t) => {
  const server = await UpstreamServer.start({ preset: "test" });
  t.teardown(() => server.stop());
  const sent = new Map<string, string[]>();
  const engine = new UpstreamEngine(
    {
      upstream: { url: server.url, model: server.model, timeoutMs: 120_000, retries: 1 },
      maxSessions: 4,
      maxTokens: 512,
      contextSize: 8192,
      onRequest: (id, request) => sent.set(id, [...(sent.get(id) ?? []), JSON.stringify(request.messages)]),
    },
    new InProcessExecutor(),
    createLogger("upstream-conformance", "silent"),
  );
  t.teardown(() => engine.close());
  engineConformance(t, {
    engine,
    modes: ["sync", "syncParallel", "asyncNaive"],
    refused: [{ mode: "async", reason: new RegExp(ASYNC_NEEDS_OWN_ENGINE.slice(0, 40).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) }],
    sawInput: (s, text) => (sent.get(s.id) ?? []).some((messages) => messages.includes(JSON.stringify(text).slice(1, -1))),
  });
});

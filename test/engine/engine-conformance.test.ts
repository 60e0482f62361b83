/**
 * The llama.cpp engine (real llama.cpp on the generated `test` model, the
 * builtin tools on an in-process executor) through the Engine conformance
 * suite: async, sync and syncParallel; asyncNaive is refused (a client-side
 * mode here).
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { createLogger } from "../../common/src/index.js";
import { createEngine, loadRuntime, type EngineOptions } from "../../engine-pod/src/engine/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { engineConformance } from "./conformance.js";

t.test("llama.cpp engine", async (t) => {
  const log = createLogger("engine-conformance", "warn");
  const options: EngineOptions = { modelPath: await ensureModel({ preset: "test" }), gpu: false, sequences: 4, contextSize: 4096, threads: 1, kvPolicy: "auto", maxTokens: 512, prefixCache: true };
  const runtime = await loadRuntime(options, log);
  const engine = await createEngine(options, new InProcessExecutor(), log, { calibrate: false, runtime });
  t.teardown(() => engine.close());
  engineConformance(t, {
    engine,
    modes: ["async", "sync", "syncParallel"],
    refused: [{ mode: "asyncNaive", reason: /--backend openai/ }],
    // What the sequence holds: the tokens of its context, as text.
    sawInput: (s, text) => runtime.model.detokenize(s.inspect().tokens.context as Token[]).includes(text),
  });
});

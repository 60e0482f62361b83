/**
 * @module The draft model runs beside the main model, not between its steps.
 * node-llama-cpp gives every context of one Llama a share of one thread
 * budget, and the engine sets that budget to the main model's `--threads`;
 * a draft without threads of its own waited for each main decode step to
 * end, so its generation time g grew with the main model's G (measured:
 * g/G ≈ 0.65 for a draft ~40x cheaper per token). The draft now adds its
 * `--draft-threads` to the budget while loaded. Real runtime and generated
 * models.
 */
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { DEFAULT_ENGINE_OPTIONS, loadRuntime } from "../../engine-pod/src/engine/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { DraftModel } from "../../engine-pod/src/speculation/index.js";

/** node-llama-cpp's (internal) consumer of the shared thread budget: each decode step of a context takes its threads from it. */
interface ThreadConsumer {
  getAllocationToConsume(): Promise<[number, { dispose(): void }]> | [number, { dispose(): void }];
}

t.test("a draft model runs while the main model holds its threads, and gives its own back on close", async (t) => {
  const log = createLogger("test", "warn");
  const [modelPath, draftPath] = await Promise.all([ensureModel({ preset: "test" }), ensureModel({ preset: "test", seed: 2 })]);
  const options = { ...DEFAULT_ENGINE_OPTIONS, modelPath, sequences: 1, contextSize: 512, threads: 1, gpu: false as const };
  const runtime = await loadRuntime(options, log);
  t.teardown(() => runtime.close());
  t.equal(runtime.llama.maxThreads, 1, "the engine's budget is its --threads");

  const draft = await DraftModel.load(runtime.llama, { modelPath: draftPath, sequences: 1, contextSize: 512, threads: 1 }, log);
  t.equal(runtime.llama.maxThreads, 2, "the draft brings its own thread");

  // The main model mid-step: its context holds its thread, as during a decode.
  const main = runtime.context as unknown as { _reserveThreads(): void; _freeReservedThreads(): void; _threadSplitterConsumer: ThreadConsumer };
  main._reserveThreads();
  const [threads, held] = await main._threadSplitterConsumer.getAllocationToConsume();
  t.equal(threads, 1);
  const history = draft.tokenize("The weather in Paris is");
  const run = draft.run(history, draft.tokenize(" sunny and warm today"));
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<string>((r) => (timer = setTimeout(() => r("waited for the main model's thread"), 20_000)));
  const outcome = await Promise.race([run.then(() => "ran"), waited]);
  clearTimeout(timer);
  held.dispose();
  main._freeReservedThreads();
  t.equal(outcome, "ran", "the draft's forward passes do not wait for the main model's step to end");
  const r = await run;
  t.ok(r.decoded > 0 && r.prefilled > 0, "real forward passes");

  await draft.close();
  t.equal(runtime.llama.maxThreads, 1, "closing the draft returns its thread");
});

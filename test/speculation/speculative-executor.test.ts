/**
 * @module `SpeculativeExecutor` is an Executor like the others: the shared
 * executor conformance suite, over the in-process executor, with no
 * speculator attached (every call is a miss and runs on the inner executor).
 * Hits are covered by the speculation tests (in-flight-hit, tool-cache).
 */
import t from "tap";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { SpeculativeExecutor } from "../../engine-pod/src/speculation/index.js";
import { executorConformance } from "../executor/conformance.js";

t.test("conformance", async (t) => {
  executorConformance(t, { create: async () => ({ executor: new SpeculativeExecutor(new InProcessExecutor()) }) });
});

/**
 * @module Multi-byte text through every calling mode on the generated
 * `test` model (SPM with byte fallback):
 * in async, sync and syncParallel both calls to the same tool are dispatched
 * with their exact arguments, their results and a user interrupt are injected
 * verbatim, and the final text streams exactly; on the completion path (the
 * OpenAI endpoint) tool calls come back with exact arguments and a restarted
 * request carries multi-byte results in its history.
 */
import t from "tap";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { checkEveryMode } from "./multibyte-fixture.js";

t.test("every mode keeps multi-byte calls, results and interrupts exact", async (t) => {
  await checkEveryMode(t, await ensureModel({ preset: "test" }));
});

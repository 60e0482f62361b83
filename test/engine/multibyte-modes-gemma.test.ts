/**
 * @module Multi-byte text through every calling mode on Gemma 3 270M
 * (markers as split text; skips, saying why, when the model is absent):
 * in async, sync and syncParallel both calls to the same tool are dispatched
 * with their exact arguments, their results and a user interrupt are injected
 * verbatim, and the final text streams exactly; on the completion path (the
 * OpenAI endpoint) tool calls come back with exact arguments and a restarted
 * request carries multi-byte results in its history.
 */
import t from "tap";
import { checkEveryMode, GEMMA, gemmaSkip } from "./multibyte-fixture.js";

t.test("every mode keeps multi-byte calls, results and interrupts exact", { skip: gemmaSkip }, async (t) => {
  await checkEveryMode(t, GEMMA);
});

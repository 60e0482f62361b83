/**
 * @module Chunked prefill on real llama.cpp: a long prompt is evaluated a
 * chunk per step, so a session already decoding keeps producing a token every
 * step during it, and the chunked fill leaves the same state as one big
 * evaluation (greedy samples equal to a bare sequence's).
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { startEngine, TOOLS } from "./engine-fixture.js";

const CHUNK = 32;
const { engine, runtime } = await startEngine(t, { sequences: 3, prefixCache: false, prefillChunk: CHUNK });

t.test("a running session keeps decoding while a long prompt is prefilled", async (t) => {
  const a = engine.createSession({ prompt: "keep talking", maxTokens: 100_000 });
  await new Promise<void>((resolve) => {
    const off = a.subscribe((e) => {
      if (e.type === "text") (off(), resolve());
    });
  });
  const before = a.inspect().tokens.sampled.length;
  let during = -1;
  // A long prompt (system prompt with tools, ~900 tokens); its first token is the policy's "ok".
  const b = engine.createSession({ prompt: "a long one", tools: TOOLS, policy: { type: "text", pieces: ["ok"] } });
  b.subscribe((e) => {
    if (e.type === "text" && during < 0) during = a.inspect().tokens.sampled.length - before;
  });
  const doneB = await b.finished;
  const promptLen = doneB.usage.promptTokens;
  t.ok(promptLen > 8 * CHUNK, `a long prompt (${promptLen} tokens)`);
  t.ok(during >= Math.floor(promptLen / CHUNK) - 2, `a decoded ${during} tokens during b's ${Math.ceil(promptLen / CHUNK)}-chunk prefill`);
  engine.cancel(a.id);
  await a.finished;
});

t.test("a chunked fill leaves the same state as one evaluation", async (t) => {
  const s = engine.createSession({ prompt: "same state", system: "You are a helpful assistant. ".repeat(20), temperature: 0, maxTokens: 40 });
  await s.finished;
  const tr = s.inspect().tokens;
  const promptLen = s.events[0]?.type === "started" ? s.events[0].promptTokens : 0;
  t.ok(promptLen > CHUNK, "the prompt spans chunks");
  const prompt = tr.context.slice(0, promptLen) as Token[];
  // Reference: a bare sequence of the same context, the same sampling, the prompt in one evaluation.
  const rt = runtime;
  const seq = rt.sequences[2]!;
  const ref: Token[] = [];
  const gen = seq.evaluate(prompt, { temperature: 0, topK: 0, topP: 1, tokenBias: rt.intrBias, yieldEogToken: true });
  for (let r = await gen.next(); r.done !== true && ref.length < tr.sampled.length; r = await gen.next()) ref.push(r.value);
  await gen.return();
  await seq.clearHistory();
  t.same(tr.sampled, ref, "greedy samples equal");
});

/**
 * @module Prefix sharing on real llama.cpp (the `test` model, one thread):
 * reusing a resident prefix evaluates only the new suffix, and forking a
 * system-prompt prefix into another sequence (the pinned internal copy)
 * evaluates nothing; in both cases the greedy continuation equals a fresh
 * evaluation of the whole prompt.
 */
import t from "tap";
import { getModuleVersion, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { FORK_TESTED_VERSION, forkPrefix, reusePrefix } from "../../engine-pod/src/kv/index.js";
import { greedy, loadTestModel, textTokens } from "./llama-fixture.js";

const fx = await loadTestModel({ sequences: 3, contextSize: 1024 });
t.teardown(() => fx.close());

const system = textTokens(fx.model, 90, "You are an agent; call tools asynchronously. ");
const userA = fx.model.tokenize(" First question: what is the weather in Paris?");
const userB = fx.model.tokenize(" Second question: add two numbers please.");
const CONTINUE = 16;

/** Greedy continuation of `tokens` on a fresh sequence. */
async function fresh(tokens: readonly Token[], count = CONTINUE): Promise<Token[]> {
  const seq = fx.context.getSequence();
  try {
    return await greedy(seq, tokens, count);
  } finally {
    await seq.dispose();
  }
}

/** Every token llama.cpp evaluated on the sequence (its meter splits them into input and output). */
function evaluated(seq: LlamaContextSequence): number {
  return seq.tokenMeter.usedInputTokens + seq.tokenMeter.usedOutputTokens;
}

function commonPrefix(a: readonly Token[], b: readonly Token[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

t.test("the installed node-llama-cpp is the version the internal fork was verified on", async (t) => {
  t.equal(await getModuleVersion(), FORK_TESTED_VERSION, "re-verify forkPrefix before upgrading node-llama-cpp");
});

t.test("prefix reuse keeps the common prefix and evaluates only the suffix", async (t) => {
  const seq = fx.context.getSequence();
  t.teardown(() => seq.dispose());
  const first = [...system, ...userA];
  await greedy(seq, first, 6); // the sequence now holds system + userA + 5 generated tokens
  const held = seq.contextTokens.slice();
  const second = [...system, ...userB];
  const lcp = commonPrefix(held, second);
  t.ok(lcp >= system.length, "at least the system prompt is shared");

  const reuse = await reusePrefix(seq, second);
  t.equal(reuse.reusedTokens, lcp);
  t.equal(reuse.erasedTokens, held.length - lcp);
  t.same(reuse.suffix, second.slice(lcp));
  t.equal(seq.nextTokenIndex, lcp, "the tail after the common prefix is erased");

  const inputBefore = evaluated(seq);
  await seq.evaluateWithoutGeneratingNewTokens(reuse.suffix.slice(0, -1));
  t.equal(evaluated(seq) - inputBefore, reuse.suffix.length - 1, "only the suffix is evaluated");
  const out = await greedy(seq, reuse.suffix.slice(-1), CONTINUE);
  t.same(out, await fresh(second), "continuation equals a fresh evaluation of the whole prompt");
});

t.test("prefix reuse of an identical prompt leaves one token to evaluate for logits", async (t) => {
  const seq = fx.context.getSequence();
  t.teardown(() => seq.dispose());
  await seq.evaluateWithoutGeneratingNewTokens(system);
  const reuse = await reusePrefix(seq, system);
  t.equal(reuse.reusedTokens, system.length - 1);
  t.same(reuse.suffix, system.slice(-1));
  t.same(await greedy(seq, reuse.suffix, CONTINUE), await fresh(system));
});

t.test("a prompt with nothing in common erases everything", async (t) => {
  const seq = fx.context.getSequence();
  t.teardown(() => seq.dispose());
  await seq.evaluateWithoutGeneratingNewTokens(system);
  const other = fx.model.tokenize("Completely different words here.");
  const reuse = await reusePrefix(seq, other);
  t.equal(reuse.reusedTokens, commonPrefix(system, other));
  t.same(reuse.suffix, other.slice(reuse.reusedTokens));
  t.same(await greedy(seq, reuse.suffix, CONTINUE), await fresh(other));
});

t.test("fork copies a resident system prefix without evaluating it", async (t) => {
  const source = fx.context.getSequence();
  const target = fx.context.getSequence();
  t.teardown(async () => {
    await source.dispose();
    await target.dispose();
  });
  const head = await greedy(source, [...system, ...userA], 4); // source holds more than the prefix
  const pending = head[head.length - 1] as Token;
  const sourceTokens = source.contextTokens.slice();

  const inputBefore = evaluated(target);
  const fork = await forkPrefix(target, source, system.length);
  t.equal(fork.method, "copy", "the internal copy was used");
  t.equal(fork.evaluatedTokens, 0);
  t.equal(evaluated(target), inputBefore, "nothing evaluated on the target");
  t.same(target.contextTokens, system, "the target holds exactly the prefix");
  t.same(source.contextTokens, sourceTokens, "the source is untouched");

  const out = await greedy(target, userB, CONTINUE);
  t.same(out, await fresh([...system, ...userB]), "continuation equals a fresh evaluation");
  const sourceTail = await greedy(source, [pending], CONTINUE);
  t.same([...head, ...sourceTail], await fresh([...system, ...userA], 4 + CONTINUE), "the source continues as if never forked");
});

t.test("without the internal copy, fork falls back to evaluating the prefix", async (t) => {
  const source = fx.context.getSequence();
  const target = fx.context.getSequence();
  t.teardown(async () => {
    await source.dispose();
    await target.dispose();
  });
  await source.evaluateWithoutGeneratingNewTokens([...system, ...userA]);
  // As after an upgrade that renamed the internal method.
  Object.defineProperty(target, "_copyStateFromOtherSequence", { value: undefined, configurable: true });
  const fork = await forkPrefix(target, source, system.length);
  t.equal(fork.method, "evaluate");
  t.equal(fork.evaluatedTokens, system.length);
  t.same(target.contextTokens, system);
  t.same(await greedy(target, userB, CONTINUE), await fresh([...system, ...userB]));
});

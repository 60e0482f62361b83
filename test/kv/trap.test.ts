/**
 * @module Trap handling on real llama.cpp (the `test` model, one thread): keep,
 * swap and recompute each leave the sequence exactly as it was, so the greedy
 * continuation after resume equals the one it would have had without the
 * pause — also when the slot was lent to another session meanwhile, and when
 * the state resumes into a different sequence. Calibration measures the
 * loaded model and the auto policy acts on it.
 */
import t from "tap";
import { existsSync, readdirSync, rmSync } from "node:fs";
import type { Token } from "node-llama-cpp";
import { KvManager, theoreticalStateBytesPerToken } from "../../engine-pod/src/kv/index.js";
import { greedy, loadTestModel, textTokens } from "./llama-fixture.js";

const fx = await loadTestModel({ sequences: 3, contextSize: 1024 });
const kv = new KvManager();
t.teardown(async () => {
  await kv.close();
  await fx.close();
});

const seqC = fx.context.getSequence();
const prompt = textTokens(fx.model, 120);
const PAUSE_AFTER = 12;
const CONTINUE = 24;

/** The uninterrupted greedy run: PAUSE_AFTER + CONTINUE tokens after the prompt. */
async function reference(): Promise<Token[]> {
  await seqC.clearHistory();
  const out = await greedy(seqC, prompt, PAUSE_AFTER + CONTINUE);
  await seqC.clearHistory();
  return out;
}
const expected = await reference();

for (const decision of ["keep", "swap", "recompute"] as const) {
  t.test(`${decision}: the greedy continuation after resume equals the unpaused one`, async (t) => {
    const seqA = fx.context.getSequence();
    t.teardown(() => seqA.dispose());
    const head = await greedy(seqA, prompt, PAUSE_AFTER);
    t.same(head, expected.slice(0, PAUSE_AFTER), "same start");
    const pending = head[head.length - 1] as Token; // sampled, not yet evaluated
    const before = seqA.contextTokens.slice();

    const { verdict, paused, pauseMs } = await kv.trap({
      sequence: seqA,
      expectedWaitMs: 1000,
      kvPressure: 1,
      override: decision,
    });
    t.equal(verdict.decision, decision);
    t.equal(verdict.reason, "override");
    t.ok(pauseMs >= 0, "pause cost recorded");
    t.equal(paused.contextTokens, before.length);
    if (decision === "keep") {
      t.equal(seqA.nextTokenIndex, before.length, "keep leaves the cells resident");
    } else {
      t.equal(seqA.nextTokenIndex, 0, `${decision} frees the sequence's cells`);
      if (paused.decision === "swap") {
        t.ok(existsSync(paused.file), "swap file written");
        t.ok(paused.bytes > 0);
      }
      // Lend the slot to another session meanwhile: its cells must not leak into the resume.
      await greedy(seqA, textTokens(fx.model, 40, "An unrelated session borrows the slot. "), 5);
      t.not(seqA.nextTokenIndex, 0, "the borrower filled the slot");
    }

    const resumed = await kv.resume(paused);
    t.equal(resumed.decision, decision);
    t.equal(resumed.contextTokens, before.length);
    t.same(seqA.contextTokens, before, "the sequence holds exactly the paused tokens");
    t.equal(resumed.evaluatedTokens, decision === "recompute" ? before.length : 0, "only recompute re-evaluates");
    if (paused.decision === "swap") t.notOk(existsSync(paused.file), "swap file removed after load");

    const tail = await greedy(seqA, [pending], CONTINUE);
    t.same(tail, expected.slice(PAUSE_AFTER, PAUSE_AFTER + CONTINUE), "continuation identical");
  });
}

for (const decision of ["swap", "recompute"] as const) {
  t.test(`${decision}: the state resumes into a different sequence`, async (t) => {
    const seqA = fx.context.getSequence();
    const seqB = fx.context.getSequence();
    t.teardown(() => seqB.dispose());
    const head = await greedy(seqA, prompt, PAUSE_AFTER);
    const pending = head[head.length - 1] as Token;
    const { paused } = await kv.trap({ sequence: seqA, expectedWaitMs: 1000, kvPressure: 1, override: decision });
    await seqA.dispose(); // the original slot is gone
    const resumed = await kv.resume(paused, seqB);
    t.equal(resumed.contextTokens, prompt.length + PAUSE_AFTER - 1);
    t.same(await greedy(seqB, [pending], CONTINUE), expected.slice(PAUSE_AFTER, PAUSE_AFTER + CONTINUE));
  });
}

t.test("calibration measures the loaded model; auto decides from it", async (t) => {
  const seq = fx.context.getSequence();
  const model = await kv.calibrate(seq, { sizes: [16, 48, 96], decodeSteps: 4 });
  t.equal(model.source, "measured");
  t.equal(seq.nextTokenIndex, 0, "calibration leaves the sequence empty");
  for (const key of ["prefillMsPerToken", "prefillTokensPerS", "decodeMsPerToken", "saveBytesPerMs", "loadBytesPerMs"] as const) {
    t.ok(Number.isFinite(model[key]) && model[key] > 0, `${key} positive and finite`);
  }
  const theory = theoreticalStateBytesPerToken(seq);
  t.equal(theory, 2 * 2 * 64 * 2, "2 · n_layer · n_embd_kv · 2 bytes (F16 KV) for the test model");
  // The state file also stores each cell's token id, position and sequence ids (a few bytes).
  t.ok(
    model.stateBytesPerToken >= (theory ?? 0) && model.stateBytesPerToken <= (theory ?? 0) + 32,
    `saved state grows by the KV bytes per token (+ cell metadata): ${model.stateBytesPerToken} vs ${theory}`,
  );

  await seq.clearHistory();
  await greedy(seq, prompt, 3);
  const overdue = await kv.trap({ sequence: seq, expectedWaitMs: 0, kvPressure: 1 });
  t.equal(overdue.paused.decision, "keep", "an interrupt that is due: keep");
  await kv.resume(overdue.paused);
  const long = await kv.trap({ sequence: seq, expectedWaitMs: 3_600_000, kvPressure: 1 });
  t.not(long.paused.decision, "keep", "an hour's wait under pressure frees the cells");
  t.equal(seq.nextTokenIndex, 0);
  await kv.resume(long.paused);
  t.equal(seq.nextTokenIndex, prompt.length + 2);
  const stats = kv.stats();
  t.equal(stats.pausedByDecision.keep + stats.pausedByDecision.swap + stats.pausedByDecision.recompute, 0, "nothing left paused");
  t.ok(stats.trapsByDecision.keep >= 1 && stats.trapsByDecision.swap >= 1 && stats.trapsByDecision.recompute >= 1, "each decision counted");
  await seq.dispose();
});

t.test("discard drops a swapped state; close removes the swap directory", async (t) => {
  const seq = fx.context.getSequence();
  await greedy(seq, prompt, 2);
  const { paused } = await kv.trap({ sequence: seq, expectedWaitMs: 1000, kvPressure: 1, override: "swap" });
  t.equal(readdirSync(kv.swapDir).length, 1);
  await kv.discard(paused);
  t.equal(readdirSync(kv.swapDir).length, 0);
  await t.rejects(kv.resume(paused), "a discarded state cannot be resumed");
  await seq.dispose();
  const other = new KvManager();
  await other.close();
  t.notOk(existsSync(other.swapDir));
});

t.test("a swap that cannot be written falls back to keep and loses nothing", async (t) => {
  const broken = new KvManager();
  rmSync(broken.swapDir, { recursive: true, force: true }); // every save now fails
  t.teardown(() => broken.close());
  const seq = fx.context.getSequence();
  t.teardown(() => seq.dispose());
  const head = await greedy(seq, prompt, PAUSE_AFTER);
  const before = seq.contextTokens.slice();
  const { verdict, paused } = await broken.trap({ sequence: seq, expectedWaitMs: 1000, kvPressure: 1, override: "swap" });
  t.equal(verdict.decision, "swap", "swap was decided");
  t.equal(paused.decision, "keep", "but the cells were kept");
  t.equal(paused.decision === "keep" ? paused.fallbackFrom : undefined, "swap");
  t.same(seq.contextTokens, before);
  await broken.resume(paused);
  t.same(await greedy(seq, [head[head.length - 1] as Token], CONTINUE), expected.slice(PAUSE_AFTER, PAUSE_AFTER + CONTINUE));
  t.equal(broken.stats().trapsByDecision.keep, 1, "counted as what was done");
});

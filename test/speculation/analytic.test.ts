/**
 * @module The paper's analytic model, checked against hand-worked values:
 * Eq. 1/2 (client-side) and Eq. 5/6 (engine-side), and Lemma 1's bound.
 */
import t from "tap";
import {
  clientSideMaxSpeedup,
  clientSideSpeedup,
  clientSideTimes,
  clientSideTimeSaved,
  clientSideTurnsTimeSaved,
  engineCachedTime,
  engineSideTimeSaved,
  engineOverlapSpecTime,
  engineOverlapTimeSaved,
  engineSpecTime,
} from "../../engine-pod/src/speculation/index.js";

t.test("Eq. 1/2 by hand", async (t) => {
  // G = 2, g = 0.5, T = 2, α = 0.8: standard 4; spec = 0.8·max(2, 2.5) + 0.2·4 = 2 + 0.8 = 2.8.
  const p = { alpha: 0.8, G: 2, g: 0.5, T: 2 };
  t.same(clientSideTimes(p), { standard: 4, spec: 2.8 });
  t.ok(Math.abs(clientSideSpeedup(p) - 4 / 2.8) < 1e-12);
  t.ok(Math.abs(clientSideTimeSaved(p) - 0.3) < 1e-12);
  // g + T < G: the tool is fully masked, spec = α·G + (1-α)(G+T) = 0.5·3 + 0.5·4 = 3.5.
  t.equal(clientSideTimes({ alpha: 0.5, G: 3, g: 0.2, T: 1 }).spec, 3.5);
  t.equal(clientSideSpeedup({ alpha: 0, G: 1, g: 0.1, T: 1 }), 1, "α = 0: no gain");
  t.throws(() => clientSideSpeedup({ alpha: 1.2, G: 1, g: 0.1, T: 1 }));
});

t.test("Lemma 1: increasing in α, bounded by (G+T)/max{G, g+T} < 2", async (t) => {
  const base = { G: 1, g: 0.1, T: 1 };
  let prev = 1;
  for (const alpha of [0.1, 0.3, 0.5, 0.9, 1]) {
    const s = clientSideSpeedup({ ...base, alpha });
    t.ok(s > prev, `α=${alpha}`);
    prev = s;
  }
  t.ok(Math.abs(clientSideMaxSpeedup(base) - 2 / 1.1) < 1e-12);
  t.ok(clientSideMaxSpeedup({ G: 1, g: 1e-9, T: 1 }) < 2);
});

t.test("Eq. 5/6 by hand", async (t) => {
  // K = 2 turns, o = 0.1, φ = 0.001, δ = 0.01, X₁ = 100, t = 20, t_o = 30, R = 50, T = 1.
  const turn = { callTokens: 20, outputTokens: 30, reasoningTokens: 50, toolTime: 1 };
  const p = { overhead: 0.1, prefillPerToken: 0.001, decodePerToken: 0.01, promptTokens: 100, turns: [turn, turn] };
  // Eq. 5: 2·2·0.1 + 0.001·(100 + 40 + 60) + 0.01·(100 + 40) + 2 = 0.4 + 0.2 + 1.4 + 2 = 4.0
  t.ok(Math.abs(engineCachedTime(p) - 4.0) < 1e-12);
  // Eq. 6 at α = 0 equals Eq. 5.
  t.ok(Math.abs(engineSpecTime({ ...p, alpha: 0 }) - 4.0) < 1e-12);
  // α = 1: 0 + 0.2 + 0.01·(2 + 100 + 0) + 0 = 1.22
  t.ok(Math.abs(engineSpecTime({ ...p, alpha: 1 }) - 1.22) < 1e-12);
  // α = 0.5: 0.2 + 0.2 + 0.01·(1 + 100 + 20) + 1 = 2.61
  t.ok(Math.abs(engineSpecTime({ ...p, alpha: 0.5 }) - 2.61) < 1e-12);
  t.ok(Math.abs(engineSideTimeSaved({ ...p, alpha: 0.5 }) - (1 - 2.61 / 4)) < 1e-12);
});

t.test("Eq. 6 with Eq. 1's overlap: a hit waits for g + T when the draft started the tool", async (t) => {
  const turn = { callTokens: 20, outputTokens: 30, reasoningTokens: 50, toolTime: 1 };
  const p = { overhead: 0.1, prefillPerToken: 0.001, decodePerToken: 0.01, promptTokens: 100, turns: [turn, turn] };
  // Tool and draft done before the call ends (g + T = 0 here): exactly Eq. 6.
  const fast = { ...p, turns: [{ ...turn, toolTime: 0 }, { ...turn, toolTime: 0 }], draftTime: 0 };
  for (const alpha of [0, 0.5, 1]) t.ok(Math.abs(engineOverlapSpecTime({ ...fast, alpha }) - engineSpecTime({ ...fast, alpha })) < 1e-12, `α = ${alpha}`);
  // α = 1, g = 0.2, T = 1: per turn max(0.01·51 + 0.001·20, 1.2) + 0.001·30 = 1.23; 0.1 + 2·1.23 = 2.56.
  t.ok(Math.abs(engineOverlapSpecTime({ ...p, alpha: 1, draftTime: 0.2 }) - 2.56) < 1e-12);
  // α = 0: Eq. 5, whatever g is.
  t.ok(Math.abs(engineOverlapSpecTime({ ...p, alpha: 0, draftTime: 0.2 }) - engineCachedTime(p)) < 1e-12);
  // Never more saved than Eq. 6 claims, and less once the tool outlasts the generation.
  t.ok(engineOverlapTimeSaved({ ...p, alpha: 0.8, draftTime: 0.2 }) < engineSideTimeSaved({ ...p, alpha: 0.8 }));
});

t.test("Eq. 1 turn by turn on measured turns: the mean of a max is not the max of means", async (t) => {
  // One turn with G = T = 2, g = 0: exactly Eq. 2 (α = 1: 4 → 2, half saved).
  t.ok(Math.abs(clientSideTurnsTimeSaved([{ turns: [{ generationMs: 2, toolMs: 2, reentryMs: 0 }], tailMs: 0 }], 1, 0) - clientSideTimeSaved({ alpha: 1, G: 2, g: 0, T: 2 })) < 1e-12);
  // Two turns, G 3 then 1, T 1 then 3 (means G = T = 2): hits cost 3 + 3 = 6 of 8, not 4 of 8.
  const scattered = { turns: [{ generationMs: 3, toolMs: 1, reentryMs: 0 }, { generationMs: 1, toolMs: 3, reentryMs: 0 }], tailMs: 0 };
  t.ok(Math.abs(clientSideTurnsTimeSaved([scattered], 1, 0) - 0.25) < 1e-12);
  // The re-entry and the tail are paid either way; α = 0.5 halves the gain; g delays the tool.
  t.ok(Math.abs(clientSideTurnsTimeSaved([{ turns: [{ generationMs: 2, toolMs: 2, reentryMs: 1 }], tailMs: 1 }], 1, 0) - (1 - 4 / 6)) < 1e-12);
  t.ok(Math.abs(clientSideTurnsTimeSaved([{ turns: [{ generationMs: 2, toolMs: 2, reentryMs: 0 }], tailMs: 0 }], 0.5, 0) - 0.25) < 1e-12);
  t.ok(Math.abs(clientSideTurnsTimeSaved([{ turns: [{ generationMs: 2, toolMs: 2, reentryMs: 0 }], tailMs: 0 }], 1, 1) - 0.25) < 1e-12);
});

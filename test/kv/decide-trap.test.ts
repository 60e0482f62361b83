/**
 * @module The trap decision rule (AsyncLM §5.4) on hand-worked cases, with a
 * hand-built cost model whose numbers are easy to follow:
 *   state 100 kB/token; save 1 GB/s (1e6 B/ms) + 0.5 ms; load 2 GB/s + 0.5 ms
 *   recompute R(n) = 0.05·n + 0.00001·n² ms   (GPU-like: cheap, but quadratic)
 * so S(n) = 1 + 0.15·n ms, and
 *   n = 1000:  S = 151,   R = 60     → recompute is cheaper
 *   n = 20000: S = 3001,  R = 5000   → swap is cheaper (the quadratic term wins)
 */
import t from "tap";
import {
  decideTrap,
  defaultCostModel,
  estimateTrapCosts,
  expectedWaitMs,
  type CostModel,
  type DecideTrapInput,
} from "../../engine-pod/src/kv/index.js";

const model: CostModel = {
  ...defaultCostModel(),
  prefillFixedMs: 0,
  prefillMsPerToken: 0.05,
  prefillMsPerTokenSq: 0.00001,
  stateBytesPerToken: 100_000,
  stateBytesFixed: 0,
  saveFixedMs: 0.5,
  saveBytesPerMs: 1e6,
  loadFixedMs: 0.5,
  loadBytesPerMs: 2e6,
};

const base: DecideTrapInput = { expectedWaitMs: 1000, contextTokens: 1000, costModel: model, kvPressure: 1, override: "auto" };

t.test("the cost estimates follow the formulas", async (t) => {
  const e = estimateTrapCosts(model, 1000);
  t.equal(e.stateBytes, 1e8);
  t.equal(e.swapOutMs, 100.5);
  t.equal(e.swapInMs, 50.5);
  t.equal(e.swapMs, 151);
  t.equal(e.recomputeMs, 60);
  const big = estimateTrapCosts(model, 20_000);
  t.equal(big.swapMs, 3001);
  t.equal(big.recomputeMs, 5000);
  t.equal(estimateTrapCosts(model, 0).recomputeMs, 0, "nothing to recompute");
});

t.test("an override wins whatever the costs", async (t) => {
  for (const override of ["keep", "swap", "recompute"] as const) {
    const v = decideTrap({ ...base, override, expectedWaitMs: 0, kvPressure: 0 });
    t.equal(v.decision, override);
    t.equal(v.reason, "override");
  }
});

t.test("an interrupt that is due (or an unusable wait) keeps the cells", async (t) => {
  for (const wait of [0, -5, Number.NaN]) {
    const v = decideTrap({ ...base, expectedWaitMs: wait });
    t.equal(v.decision, "keep", `wait ${wait}`);
    t.equal(v.reason, "wait_overdue");
    t.equal(v.estimatedCostMs, 0);
  }
});

t.test("no memory pressure keeps the cells even for a long wait", async (t) => {
  const v = decideTrap({ ...base, expectedWaitMs: 1e6, kvPressure: 0.2 });
  t.equal(v.decision, "keep");
  t.equal(v.reason, "no_pressure");
  t.equal(decideTrap({ ...base, expectedWaitMs: 1e6, kvPressure: 0.2, pressureThreshold: 0.1 }).decision, "recompute");
});

t.test("n = 1000: recompute (60 ms) when it hides in 0.8·W, keep when it does not", async (t) => {
  const fits = decideTrap({ ...base, expectedWaitMs: 100 }); // 60 ≤ 80
  t.equal(fits.decision, "recompute");
  t.equal(fits.reason, "recompute_cheaper");
  t.equal(fits.estimatedCostMs, 60);
  t.equal(fits.restoreLeadMs, 60, "start re-evaluating 60 ms before the interrupt is due");
  const tooShort = decideTrap({ ...base, expectedWaitMs: 70 }); // 60 > 56
  t.equal(tooShort.decision, "keep");
  t.equal(tooShort.reason, "cost_exceeds_wait");
  t.equal(decideTrap({ ...base, expectedWaitMs: 70, hideFraction: 1 }).decision, "recompute", "60 ≤ 1·70");
});

t.test("n = 20000: the quadratic recompute loses to the linear swap", async (t) => {
  const v = decideTrap({ ...base, contextTokens: 20_000, expectedWaitMs: 10_000 });
  t.equal(v.decision, "swap");
  t.equal(v.reason, "swap_cheaper");
  t.equal(v.estimatedCostMs, 3001);
  t.equal(v.restoreLeadMs, 1000.5, "the swap-in (load) time");
  t.equal(decideTrap({ ...base, contextTokens: 20_000, expectedWaitMs: 3000 }).decision, "keep", "3001 > 2400");
});

t.test("nothing pending (infinite wait) frees the cells by the cheaper action", async (t) => {
  t.equal(decideTrap({ ...base, contextTokens: 100, expectedWaitMs: Infinity }).decision, "recompute");
  t.equal(decideTrap({ ...base, contextTokens: 50_000, expectedWaitMs: Infinity }).decision, "swap");
});

t.test("CPU-like costs (docs/engine-facts.md: prefill 1.6 ms/token): swap wins from tiny contexts up", async (t) => {
  const cpu = defaultCostModel();
  for (const n of [16, 128, 2048]) {
    t.equal(decideTrap({ ...base, costModel: cpu, contextTokens: n, expectedWaitMs: 60_000 }).decision, "swap", `n=${n}`);
  }
});

t.test("expected wait: the earliest pending call's estimate minus its elapsed time", async (t) => {
  const pending = [
    { startedAt: 1000, estimatedLatencyMs: 500 }, // due at 1500
    { startedAt: 1200, estimatedLatencyMs: 100 }, // due at 1300
  ];
  t.equal(expectedWaitMs(pending, 1250), 50);
  t.equal(expectedWaitMs(pending, 1400), 0, "overdue calls floor at 0");
  t.equal(expectedWaitMs([], 1400), Infinity, "nothing pending");
  t.equal(expectedWaitMs([{ startedAt: 0 }], 200, 1000), 800, "default latency for a tool without an estimate");
});

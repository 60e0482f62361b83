/**
 * @module The calibration fits on synthetic measurements: the prefill model
 * p0 + p1·n + p2·n² is recovered from exact points, and noisy points never
 * yield a negative coefficient.
 */
import t from "tap";
import { estimatePrefillMs, defaultCostModel, fitLine, fitPrefill } from "../../engine-pod/src/kv/index.js";

const close = (a: number, b: number, eps = 1e-6): boolean => Math.abs(a - b) <= eps * Math.max(1, Math.abs(b));

t.test("exact quadratic points give back their coefficients", async (t) => {
  const points = [32, 128, 320, 1024].map((x) => ({ x, y: 5 + 2 * x + 0.001 * x * x }));
  const fit = fitPrefill(points);
  t.ok(close(fit.prefillFixedMs, 5), `p0 ${fit.prefillFixedMs}`);
  t.ok(close(fit.prefillMsPerToken, 2), `p1 ${fit.prefillMsPerToken}`);
  t.ok(close(fit.prefillMsPerTokenSq, 0.001), `p2 ${fit.prefillMsPerTokenSq}`);
  t.ok(close(estimatePrefillMs({ ...defaultCostModel(), ...fit }, 2048), 5 + 4096 + 0.001 * 2048 * 2048, 1e-6));
});

t.test("linear points give no quadratic term", async (t) => {
  const fit = fitPrefill([32, 128, 320].map((x) => ({ x, y: 3 + 1.5 * x })));
  t.ok(close(fit.prefillMsPerToken, 1.5));
  t.ok(close(fit.prefillMsPerTokenSq, 0, 1e-9) || fit.prefillMsPerTokenSq < 1e-9);
});

t.test("noisy points (per-token cost falling with size) never give negative coefficients", async (t) => {
  const fit = fitPrefill([
    { x: 32, y: 120 },
    { x: 128, y: 300 },
    { x: 320, y: 640 },
  ]);
  for (const [k, v] of Object.entries(fit)) t.ok(v >= 0, `${k} = ${v} ≥ 0`);
  t.ok(estimatePrefillMs({ ...defaultCostModel(), ...fit }, 320) > 0);
});

t.test("line fit", async (t) => {
  const line = fitLine([
    { x: 0, y: 1 },
    { x: 10, y: 21 },
  ]);
  t.ok(close(line.intercept, 1) && close(line.slope, 2));
  t.same(fitLine([]), { intercept: 0, slope: 0 });
});

t.test("a single point gives a per-token rate, not a constant", async (t) => {
  const fit = fitPrefill([{ x: 100, y: 50 }]);
  t.equal(fit.prefillMsPerToken, 0.5);
  t.equal(fit.prefillFixedMs, 0);
  t.equal(fit.prefillMsPerTokenSq, 0);
});

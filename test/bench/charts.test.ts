import t from "tap";
import { renderLatencyChart, renderSweepChart } from "../../bench/bfcl/charts.js";

t.test("latency bars and the sweep render to SVG with their data", async (t) => {
  const svg = await renderLatencyChart(
    [
      { workload: "parallel", mode: "sync", p50_ms: 900, p10_ms: 700, p90_ms: 1200, speedup_vs_sync: 1 },
      { workload: "parallel", mode: "async", p50_ms: 500, p10_ms: 400, p90_ms: 650, speedup_vs_sync: 1.8 },
    ],
    ["sync", "async"],
  );
  t.match(svg, /^<svg/);
  t.match(svg, /1\.80x/, "speedup label drawn");
  t.match(svg, /parallel/);
  const sweep = await renderSweepChart([
    { scale: 1, e_over_g: 0.5, speedup_measured: 1.4, speedup_predicted: 1.5, speedup_analytic: 1.45 },
    { scale: 2, e_over_g: 1, speedup_measured: 1.9, speedup_predicted: 2, speedup_analytic: 1.8 },
  ]);
  t.match(sweep, /^<svg/);
  t.match(sweep, /1 \+ E\/G/);
  t.match(sweep, /exact analytic/);
});

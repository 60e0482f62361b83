/**
 * @module The autoscale bench's chart: per policy, the replicas of each side
 * over the trace (step lines) above each task's latency by its arrival time
 * (points, with the SLO as a dashed rule).
 */
import type { TopLevelSpec } from "vega-lite";
import type { PolicyRun } from "./run-policy.js";

export function chartSpec(runs: readonly PolicyRun[], sloMs: number): TopLevelSpec {
  const replicas = runs.flatMap((r) =>
    (["engines", "tools"] as const).flatMap((side) => {
      const steps = side === "engines" ? r.engineSteps : r.runnerSteps;
      // Each step drawn to the run's end, so the last count shows.
      return [...steps, { atMs: r.endMs, replicas: steps.at(-1)?.replicas ?? 0 }].map((s) => ({ policy: r.policy, side, t_s: s.atMs / 1000, replicas: s.replicas }));
    }),
  );
  const latency = runs.flatMap((r) => r.tasks.map((x) => ({ policy: r.policy, t_s: x.atMs / 1000, task_s: x.ok && x.taskMs !== undefined ? x.taskMs / 1000 : null, ok: x.ok })));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Autoscaling policies on the same trace: replicas (top) and task latency by arrival (bottom)",
    vconcat: [
      {
        width: 520,
        height: 180,
        data: { values: replicas },
        mark: { type: "line", interpolate: "step-after" },
        encoding: {
          x: { field: "t_s", type: "quantitative", title: "time (s)" },
          y: { field: "replicas", type: "quantitative", title: "replicas (processes alive)" },
          color: { field: "policy", type: "nominal" },
          strokeDash: { field: "side", type: "nominal" },
        },
      },
      {
        width: 520,
        height: 180,
        layer: [
          {
            data: { values: latency.filter((x) => x.task_s !== null) },
            mark: { type: "point", filled: true, size: 20 },
            encoding: {
              x: { field: "t_s", type: "quantitative", title: "task arrival (s)" },
              y: { field: "task_s", type: "quantitative", title: "task latency (s)" },
              color: { field: "policy", type: "nominal" },
            },
          },
          { data: { values: [{ slo: sloMs / 1000 }] }, mark: { type: "rule", strokeDash: [4, 4] }, encoding: { y: { field: "slo", type: "quantitative" } } },
        ],
      },
    ],
  };
}

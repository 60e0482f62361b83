/**
 * The autoscale bench's pure parts: the trace file format and its errors,
 * the default step-and-burst shape, seeded arrivals that follow the rate,
 * the replica-seconds integral, and the policies' wiring of the operator's
 * decision function.
 */
import t from "tap";
import { parseConfig } from "../../bench/autoscale/main.js";
import { policyOf, queueDepthEngines, type ScaleSetup } from "../../bench/autoscale/policies.js";
import { replicaSeconds, ReplicaTimeline } from "../../bench/autoscale/replica-seconds.js";
import { checkTargets, summarize, withCost } from "../../bench/autoscale/summary.js";
import { parseTrace, rateAt, shapedTrace, traceArrivals } from "../../bench/autoscale/trace.js";
import type { SignalSample } from "../../operator/src/autoscaling/index.js";

t.test("a trace file: points hold until the next, the last ends it", async (t) => {
  const trace = parseTrace(JSON.stringify([{ at_s: 0, rate: 0.1 }, { at_s: 10, rate: 0.5 }, { at_s: 30, rate: 0 }]));
  t.same(trace.points, [{ atS: 0, rate: 0.1 }, { atS: 10, rate: 0.5 }, { atS: 30, rate: 0 }]);
  t.equal(trace.durationS, 30);
  t.equal(rateAt(trace, 9.9), 0.1);
  t.equal(rateAt(trace, 10), 0.5);
  t.equal(rateAt(trace, 30), 0, "over at the end");
  t.equal(parseTrace(JSON.stringify([{ at_s: 0, rate: 1 }]), 12).durationS, 12, "--duration ends a one-point trace");
});

t.test("a bad trace file is refused with the entry and field named", async (t) => {
  t.throws(() => parseTrace("{"), /trace: not JSON/);
  t.throws(() => parseTrace("[]"), /non-empty JSON list/);
  t.throws(() => parseTrace(JSON.stringify([{ at_s: 1, rate: 1 }, { at_s: 5, rate: 0 }])), /trace\[0\]\.at_s: the first point must be at 0/);
  t.throws(() => parseTrace(JSON.stringify([{ at_s: 0, rate: 1 }, { at_s: 0, rate: 2 }])), /trace\[1\]\.at_s: must be later than trace\[0\]\.at_s/);
  t.throws(() => parseTrace(JSON.stringify([{ at_s: 0, rate: -1 }, { at_s: 5, rate: 0 }])), /trace\[0\]\.rate: must be a number of tasks per second ≥ 0, got -1/);
  t.throws(() => parseTrace(JSON.stringify([{ at_s: 0, rate: "fast" }])), /trace\[0\]\.rate/);
  t.throws(() => parseTrace(JSON.stringify([{ at_s: 0, rate: 1 }])), /lasts 0 s/);
});

t.test("the default shape: base, a step, a burst on top of it, base again", async (t) => {
  const trace = shapedTrace({ baseRate: 0.1, stepRate: 0.3, burstRate: 0.6, durationS: 100 });
  t.same(
    [5, 30, 50, 70, 90].map((s) => rateAt(trace, s)),
    [0.1, 0.3, 0.6, 0.3, 0.1],
  );
});

t.test("arrivals are seeded and follow the rate", async (t) => {
  const trace = parseTrace(JSON.stringify([{ at_s: 0, rate: 0.2 }, { at_s: 500, rate: 2 }, { at_s: 1000, rate: 0 }]));
  const a = traceArrivals(trace, 7);
  t.same(traceArrivals(trace, 7), a, "same seed, same arrivals");
  t.not(traceArrivals(trace, 8).length === a.length && traceArrivals(trace, 8).every((x, i) => x === a[i]), true, "another seed, other arrivals");
  t.ok(a.every((x, i) => i === 0 || x >= a[i - 1]!), "in order");
  t.ok(a.every((x) => x >= 0 && x < 1_000_000), "within the trace");
  const low = a.filter((x) => x < 500_000).length;
  const high = a.length - low;
  // Expected 100 and 1000 arrivals: far apart beyond any Poisson spread.
  t.ok(low > 60 && low < 140, `~100 at 0.2/s over 500 s (got ${low})`);
  t.ok(high > 850 && high < 1150, `~1000 at 2/s over 500 s (got ${high})`);
});

t.test("replica-seconds integrate the count over the run", async (t) => {
  t.equal(replicaSeconds([{ atMs: 0, replicas: 2 }], 10_000), 20, "2 replicas for 10 s");
  const tl = new ReplicaTimeline(1);
  tl.record(4000, 3);
  tl.record(6000, 2);
  tl.record(6000, 1); // a second change at the same instant replaces the first
  t.same(tl.changes, [{ atMs: 0, replicas: 1 }, { atMs: 4000, replicas: 3 }, { atMs: 6000, replicas: 1 }]);
  t.equal(tl.replicaSeconds(10_000), 4 * 1 + 2 * 3 + 4 * 1);
  t.equal(tl.replicaSeconds(5000), 4 + 3, "cut at the end");
  t.throws(() => tl.record(1000, 2), /before the last change/);
  tl.reset(2);
  t.same(tl.changes, [{ atMs: 0, replicas: 2 }], "a reset starts over at 0");
});

const setup: ScaleSetup = {
  engines: { minReplicas: 1, maxReplicas: 3 },
  runners: { minReplicas: 1, maxReplicas: 4 },
  runnerConcurrency: 1,
  sloTaskP90Ms: 10_000,
  stabilizationS: 30,
  idleS: 30,
  engineTarget: 0.75,
};

const engine = (active: number, queued = 0) => ({ ready: true, queuedSessions: queued, activeSessions: active, freeSequences: Math.max(0, 4 - active), totalSequences: 4, kvCellsUsed: 0, kvCellsTotal: 8192, tokensPerSecond: 50 });

t.test("a tool backlog: joint adds runners, engine-only adds engines, static stays at max", async (t) => {
  // Four sessions parked on tool calls that wait well past the budget (1 s of a 10 s SLO): the tools hold tasks up.
  const window: SignalSample[] = [{ at: 1_000_000, engines: [engine(4)], tools: { tools: { pending: 3, ackPending: 1, waitP90Ms: 4000 } } }];
  const joint = policyOf("joint", setup).decide({ now: 1_000_000, window, engines: 1, runners: 1 });
  t.equal(joint.runners, 4, "one runner per outstanding call (concurrency 1)");
  t.equal(joint.engines, 1, "no engine: the queueing is the tools'");
  t.match(joint.reasons.join("\n"), /scaled ToolPool tools 1→4: 3 calls pending/, "the operator's reason");
  const engineOnly = policyOf("engine-only", setup).decide({ now: 1_000_000, window, engines: 1, runners: 1 });
  t.equal(engineOnly.engines, 2, "4 active on 4 sequences against a 75% target");
  t.equal(engineOnly.runners, 1, "tools stay at min");
  t.equal(queueDepthEngines(window[0]!, 0.75), 2);
  const fixed = policyOf("static", setup);
  t.same(fixed.initial, { engines: 3, runners: 4 });
  t.same(fixed.decide({ now: 1_000_000, window, engines: 3, runners: 4 }), { engines: 3, runners: 4, reasons: [] });
});

t.test("summary: attainment over every task (failed ones missed), replica-seconds per side", async (t) => {
  const s = summarize(
    {
      policy: "joint",
      tasks: [
        { atMs: 0, ok: true, taskMs: 1000, retries: 0 },
        { atMs: 10, ok: true, taskMs: 3000, retries: 1 },
        { atMs: 20, ok: false, retries: 0, error: "503" },
        { atMs: 30, ok: true, taskMs: 1500, retries: 0 },
      ],
      endMs: 10_000,
      engineSteps: [],
      runnerSteps: [],
      engineReplicaSeconds: 12.4,
      runnerReplicaSeconds: 30,
      decisions: [{ atMs: 5, reason: "x" }],
      coldStarts: [{ side: "tools", id: "runner-2", atMs: 5, readyMs: 800 }],
      ticks: [],
    },
    2000,
    { calls: 3, toolMs: 2000, sequencesPerEngine: 4, runnerConcurrency: 1, engines: { minReplicas: 1, maxReplicas: 3 }, runners: { minReplicas: 1, maxReplicas: 4 }, holdMs: 30_000 },
  );
  t.equal(s.slo_attainment, 0.5, "2 of 4 within 2 s");
  t.equal(s.replica_seconds_engines, 12);
  t.equal(s.replica_seconds_tools, 30);
  t.equal(s.cold_starts, 1);
  t.equal(s.cold_start_p50_ms, 800);
  t.equal(s.scale_decisions, 1);
  t.equal(s.task_p90_ms, 3000);
  // No task carries its time split, so none is placed in time: the follower keeps each side at its minimum for the 10 s.
  t.equal(s.follower_replica_seconds_engines, 10);
  t.equal(s.follower_replica_seconds_tools, 10);
  t.equal(s.follower_held_replica_seconds, 20);
});

t.test("flags: unknown ones and bad bounds are refused", async (t) => {
  t.throws(() => parseConfig(["--burst", "2"]), /unknown flag --burst/);
  t.throws(() => parseConfig(["--min-engines", "3", "--max-engines", "2"]), /--min-engines \(3\) exceeds --max-engines \(2\)/);
  t.throws(() => parseConfig(["--policies", "static,hpa"]), /unknown policy "hpa"/);
  const c = parseConfig(["--quick"]);
  t.equal(c.trace.durationS, 90);
  t.same(c.policies, ["static", "engine-only", "joint"]);
});

t.test("the issue's targets are checked against the joint run", async (t) => {
  const row = (policy: string, slo_attainment: number, engines: number, tools: number) => ({
    policy, slo_attainment, replica_seconds_engines: engines, replica_seconds_tools: tools, task_p90_ms: 1, cold_starts: 0, task_p50_ms: 1, tasks: 10, completed: 10, scale_decisions: 0, cold_start_p50_ms: null,
    follower_replica_seconds_engines: 30, follower_replica_seconds_tools: 20, follower_held_replica_seconds: 80,
  });
  const results = withCost([row("static", 1, 100, 100), row("engine-only", 0.7, 60, 20), row("joint", 0.96, 50, 60)]);
  t.equal(results[2]!.cost_vs_static, 0.55);
  t.equal(results[2]!.follower_cost_vs_static, 0.25, "the follower's 50 replica-seconds of static's 200");
  t.equal(results[2]!.follower_held_cost_vs_static, 0.4, "held through the window: 80 of 200");
  t.same(
    checkTargets(results).map((c) => [c.met, c.measured]),
    [[true, "96.0%"], [true, "55.0% (the clairvoyant follower at its targets: 25.0%; held through the scale-down window: 40.0%)"], [true, "96.0% vs 70.0%"]],
  );
  const missed = checkTargets(withCost([row("static", 1, 100, 100), row("joint", 0.9, 100, 40)]));
  t.same(missed.map((c) => c.met), [false, false], "below 95%, above 60%; no engine-only run, no comparison");
});

/**
 * The joint autoscaler's decision function on recorded signal traces
 * (test/fixtures/autoscaling): each trace is replayed tick by tick, the
 * decision's replica counts applied before the next tick, as the controller
 * does. Tools as the bottleneck grow only the ToolPool, generation only the
 * EnginePool; when load stops both shrink after their stabilization windows
 * and not before, the zero-minimum pool goes to zero after idling; bounds
 * hold; external mode gets no decision; a pool shared by apps gets the most
 * any of them wants; pools at zero wake when the router holds requests for
 * the engines or calls wait for the runners, also on a pass run between
 * ticks (the wake check's).
 */
import t from "tap";
import { autoscalingTrace as trace, type AutoscalingTrace as Trace } from "../helpers/autoscaling-trace.js";
import { asleep, boundsOf, CALL_TIME_WINDOW_MS, decideAutoscaling, PoolWants, wakesFromZero, windowMsOf, type AutoscaleDecision, type PoolDecision, type ScaledPool, type SignalSample } from "../../operator/src/autoscaling/index.js";


interface Tick {
  /** Seconds since the trace's first sample. */
  t: number;
  decision: AutoscaleDecision;
}

/** Replays a trace: at each sample, decide over the window the controller would keep, then apply the counts. */
function replay(tr: Trace): { ticks: Tick[]; changes: (PoolDecision & { t: number })[]; final: Record<string, number> } {
  const engine = tr.enginePool === undefined ? undefined : { ...tr.enginePool };
  const tools = tr.toolPools.map((p) => ({ ...p }));
  const keepMs = Math.max(0, ...[engine, ...tools].flatMap((p) => (p?.autoscaling ? [windowMsOf(boundsOf(p.autoscaling))] : [])));
  const t0 = tr.samples[0]?.at ?? 0;
  const ticks: Tick[] = [];
  const changes: (PoolDecision & { t: number })[] = [];
  tr.samples.forEach((sample, i) => {
    const now = sample.at;
    const window = tr.samples.slice(0, i + 1).filter((s) => s.at >= now - keepMs);
    const decision = decideAutoscaling({ now, ...(tr.slo ? { slo: tr.slo } : {}), ...(engine ? { enginePool: engine } : {}), toolPools: tools, window });
    for (const d of decision.pools) {
      const pool = d.kind === "EnginePool" ? engine : tools.find((p) => p.name === d.name);
      if (pool === undefined) throw new Error(`decision for an unknown pool ${d.name}`);
      if (d.direction !== undefined) changes.push({ ...d, t: (now - t0) / 1000 });
      pool.replicas = d.desired;
    }
    ticks.push({ t: (now - t0) / 1000, decision });
  });
  const final = Object.fromEntries([...(engine ? [[engine.name, engine.replicas] as const] : []), ...tools.map((p) => [p.name, p.replicas] as const)]);
  return { ticks, changes, final };
}

t.test("tools are the bottleneck: only the ToolPool grows", async (t) => {
  const { ticks, changes, final } = replay(trace("tools-bottleneck"));
  t.same(final, { qwen: 1, weather: 12 }, "runners for every outstanding call (45 calls / 4 per runner); the engine stays");
  t.ok(changes.every((c) => c.kind === "ToolPool" && c.direction === "up"), "every change grows the ToolPool");
  t.equal(changes[0]?.t, 20, "no runner added while the p90 wait (0.3 s) is within the SLO's 0.8 s tool-wait budget");
  t.equal(ticks.at(-1)?.decision.bottleneck, "tools");
  t.equal(changes.at(-1)?.reason, "scaled ToolPool weather 11→12: 37 calls pending, 8 running (4 per runner), p90 tool wait 2.1 s (budget 0.8 s)");
  const engineReason = ticks.at(-1)?.decision.pools.find((p) => p.kind === "EnginePool")?.reason ?? "";
  t.match(engineReason, /^EnginePool qwen stays at 1: 2 sessions queued, 0 generating on 4 sequences, .*6 waiting on tools \(the tools are the bottleneck\)/);
});

t.test("generation is the bottleneck: only the EnginePool grows", async (t) => {
  const { ticks, changes, final } = replay(trace("generation-bottleneck"));
  t.same(final, { qwen: 4, weather: 2 }, "engines for the generating sessions (13 on 4 sequences each); the runners stay");
  t.ok(changes.length > 0 && changes.every((c) => c.kind === "EnginePool" && c.direction === "up"), "every change grows the EnginePool");
  t.equal(ticks.at(-1)?.decision.bottleneck, "generation");
  t.match(changes.at(-1)?.reason ?? "", /^scaled EnginePool qwen 3→4: 10 sessions queued, 13 generating on 4 sequences, KV 96% used, 420 tokens\/s, 1 waiting on tools, 1 of them on running calls holding sequences$/);
  const toolReason = ticks.at(-1)?.decision.pools.find((p) => p.kind === "ToolPool")?.reason ?? "";
  t.match(toolReason, "ToolPool weather stays at 2: 0 calls pending, 1 running", "fewer runners would do, but not for a whole window yet");
});

t.test("sessions holding every sequence through running calls grow the engines: the tools keep up, the sequences do not", async (t) => {
  // Recorded by the autoscale bench: the old rule counted these sessions as the tools' and kept one engine
  // until sessions queued 14 s later, while the router refused the burst's new sessions.
  const { changes, final } = replay(trace("sequences-held-through-calls"));
  t.same(
    changes.map((c) => [c.t, c.kind, c.current, c.desired]),
    [[4.037, "EnginePool", 1, 2]],
    "one engine more once 5 sessions want the 4 sequences (3 of them parked on running calls); no runner added, none pending",
  );
  t.equal(changes[0]?.reason, "scaled EnginePool engines 1→2: 0 sessions queued, 2 generating on 4 sequences, KV 33% used, 64 tokens/s, 3 waiting on tools, 3 of them on running calls holding sequences");
  t.same(final, { engines: 2, tools: 3 });

  const backlogged = trace("sequences-held-through-calls");
  for (const s of backlogged.samples) s.tools["tools"] = { pending: s.engines[0]!.activeSessions, ackPending: 3, waitP90Ms: 5000 };
  const r = replay(backlogged);
  t.ok(r.changes.every((c) => c.kind === "ToolPool"), "the same sessions parked on calls that wait for a runner grow the runners, not the engines");
});

t.test("first tokens slower than the app's ttftP90Ms grow the engines by one, not again on a p90 measured before the new engine came up, and they shrink back after the window", async (t) => {
  const tr = trace("ttft-over-slo");
  const { ticks, changes, final } = replay(tr);
  t.same(
    changes.map((c) => [c.t, c.current, c.desired]),
    [
      [20, 1, 2],
      [130, 2, 1],
    ],
    "up at the first breach (no queue, no KV pressure: only the TTFT objective); down 60 s after the last tick that wanted two",
  );
  t.equal(changes[0]?.reason, "scaled EnginePool qwen 1→2: 0 sessions queued, 3 generating on 4 sequences, KV 19% used, 300 tokens/s, TTFT p90 1.4 s over the SLO's 1.0 s");
  t.equal(ticks[2]?.decision.bottleneck, "generation", "a TTFT breach is a generation bottleneck");
  t.match(ticks[3]?.decision.pools[0], { current: 2, desired: 2 }, "the new engine still starting: the breach adds no third");
  t.match(ticks[4]?.decision.pools[0]?.reason ?? "", /^EnginePool qwen stays at 2: .*TTFT p90 1\.3 s over the SLO's 1\.0 s$/, "nor once it is ready, while the p90 still counts first tokens from before it");
  t.match(ticks[7]?.decision.pools[0]?.reason ?? "", /TTFT p90 0\.8 s within the SLO's 1\.0 s/);
  t.same(final, { qwen: 1 });

  const noObjective = replay({ ...tr, slo: { taskLatencyP90Ms: 20_000 } });
  t.same(noObjective.changes, [], "without a TTFT objective the same trace changes nothing");
  const noReport = replay({ ...tr, samples: tr.samples.map((s) => ({ ...s, engines: s.engines.map(({ ttftP90Ms: _, ...e }) => e) })) });
  t.same(noReport.changes, [], "engines that report no TTFT (older engines) are not scaled on it");
});

t.test("load stops: both shrink after their windows and not before; the zero-minimum pool goes to zero after idling", async (t) => {
  const { changes, final } = replay(trace("load-stops"));
  // Load is last seen at 100 s: the first ticks whose windows no longer hold it are 230 s (tools, 120 s),
  // 290 s (engines, 180 s) and, for going to zero, 410 s (300 s idle).
  const tools = changes.filter((c) => c.kind === "ToolPool");
  const engines = changes.filter((c) => c.kind === "EnginePool");
  t.same(
    tools.map((c) => [c.t, c.current, c.desired]),
    [
      [230, 6, 1],
      [410, 1, 0],
    ],
    "runners: down to one at the end of the window, to zero 300 s after the last work",
  );
  t.same(engines.map((c) => [c.t, c.current, c.desired]), [[290, 3, 1]], "engines: down to minReplicas at the end of their window");
  t.equal(tools[0]?.reason, "scaled ToolPool search 6→1: 0 calls pending, 0 running (1 per runner), at most 0 runners wanted over the last 120 s");
  t.equal(tools[1]?.reason, "scaled ToolPool search 1→0: 0 calls pending, 0 running (1 per runner), idle for 300 s");
  t.same(final, { qwen: 1, search: 0 });
});

t.test("pools at zero wake: the engines for requests the router holds, the runners for calls pending; both go back to zero after idling", async (t) => {
  const { ticks, changes, final } = replay(trace("wake-from-zero"));
  t.same(
    changes.map((c) => [c.t, c.kind, c.current, c.desired]),
    [
      [30, "EnginePool", 0, 1],
      [50, "ToolPool", 0, 1],
      [130, "EnginePool", 1, 0],
      [130, "ToolPool", 1, 0],
    ],
    "nothing wakes an idle pool; held requests wake the engines at once, pending calls the runners; 60 s idle takes both back to zero",
  );
  t.equal(changes[0]?.reason, "woke EnginePool qwen 0→1: 3 requests held by the router");
  t.equal(changes[0]?.direction, "up");
  t.equal(changes[1]?.reason, "woke ToolPool search 0→1: 2 calls pending, 0 running (2 per runner), p90 tool wait 0.0 s (budget 1.0 s)", "a departed runner's short wait does not keep calls waiting on a pool with no runner");
  t.match(ticks[4]?.decision.pools[0], { name: "qwen", current: 1, desired: 1 }, "held while the woken engine loads: no signal, the count stays");
  t.match(ticks[4]?.decision.pools[0]?.reason ?? "", "3 requests held by the router");
  t.same(final, { qwen: 0, search: 0 });
});

t.test("a held request wakes the engines up to minReplicas when that is higher, and never beyond maxReplicas", async (t) => {
  const sample: SignalSample = { at: 1_000, engines: [], tools: {}, heldRequests: 1 };
  const decide = (autoscaling: ScaledPool["autoscaling"], replicas = 0): PoolDecision | undefined =>
    decideAutoscaling({ now: 1_000, enginePool: { name: "qwen", replicas, ...(autoscaling ? { autoscaling } : {}) }, toolPools: [], window: [sample] }).pools[0];
  t.match(decide({ minReplicas: 0, maxReplicas: 3 }), { current: 0, desired: 1, reason: "woke EnginePool qwen 0→1: 1 request held by the router" });
  // minReplicas 2 on a pool at 0 (set by hand): the bound lifts it, whatever is held.
  t.match(decide({ minReplicas: 2, maxReplicas: 3 }), { current: 0, desired: 2 });
  t.match(decide({ minReplicas: 0, maxReplicas: 3 }, 2), { current: 2, desired: 2 }, "engines starting (none reports yet): held requests change nothing");
  t.equal(decide({ mode: "external", maxReplicas: 3 }), undefined, "external mode: left to the external scaler");
  const nothingHeld = decideAutoscaling({ now: 1_000, enginePool: { name: "qwen", replicas: 0, autoscaling: { minReplicas: 0, maxReplicas: 3 } }, toolPools: [], window: [{ ...sample, heldRequests: 0 }] });
  t.match(nothingHeld.pools[0], { current: 0, desired: 0, reason: "EnginePool qwen stays at 0: no engine reports, no live signal" });
});

t.test("requests the router queues while every engine is full want sequences: the engines grow for them", async (t) => {
  const full = { ready: true, queuedSessions: 0, activeSessions: 4, freeSequences: 0, totalSequences: 4, kvCellsUsed: 2048, kvCellsTotal: 16384, tokensPerSecond: 80 };
  const decide = (heldRequests: number): PoolDecision | undefined =>
    decideAutoscaling({ now: 1_000, enginePool: { name: "qwen", replicas: 1, autoscaling: { minReplicas: 1, maxReplicas: 4 } }, toolPools: [], window: [{ at: 1_000, engines: [full], tools: {}, heldRequests }] }).pools[0];
  const queued = decide(6);
  t.match(queued, { current: 1, desired: 3, direction: "up" }, "4 sessions in sequences and 6 queued in the router: 10 sequences of 4 per engine");
  t.match(queued?.reason ?? "", /^scaled EnginePool qwen 1→3: 6 requests held by the router, 0 sessions queued, 4 generating on 4 sequences/);
  t.match(decide(0), { current: 1, desired: 1 }, "the same engine without the queue: it holds what it runs");
});

t.test("a pass between ticks wakes a pool at zero on the one sample it adds; the wake check runs it only for builtin pools at zero with work waiting", async (t) => {
  const tr = trace("wake-from-zero");
  // The trace's first 30 s: both pools idle at zero, a tick every 10 s. Then, 300 ms after the last tick, a
  // pass the wake check ran adds one sample with a call pending and a request held.
  const idle = tr.samples.slice(0, 3);
  const last = idle.at(-1)!.at;
  const between: SignalSample = { at: last + 300, engines: [], tools: { search: { pending: 1, ackPending: 0 } }, heldRequests: 1 };
  const d = decideAutoscaling({ now: between.at, ...(tr.slo ? { slo: tr.slo } : {}), ...(tr.enginePool ? { enginePool: tr.enginePool } : {}), toolPools: tr.toolPools, window: [...idle, between] });
  t.same(
    d.pools.map((p) => [p.kind, p.current, p.desired, p.reason]),
    [
      ["EnginePool", 0, 1, "woke EnginePool qwen 0→1: 1 request held by the router"],
      ["ToolPool", 0, 1, "woke ToolPool search 0→1: 1 call pending, 0 running (2 per runner)"],
    ],
    "both wake on the sample, not at the next tick",
  );

  const builtin = { name: "search", replicas: 0, autoscaling: { minReplicas: 0, maxReplicas: 4 } };
  t.equal(wakesFromZero(builtin, 1), true, "builtin, at zero, one call waiting");
  t.equal(wakesFromZero(builtin, 0), false, "nothing waiting");
  t.equal(wakesFromZero({ ...builtin, replicas: 1 }, 5), false, "awake: the tick sizes it");
  t.equal(wakesFromZero({ ...builtin, autoscaling: { ...builtin.autoscaling, mode: "external" } }, 5), false, "external mode: HPA's or KEDA's");
  t.equal(wakesFromZero({ name: "search", replicas: 0 }, 5), false, "not autoscaled");
  t.equal(asleep(builtin), true);
  t.equal(asleep({ ...builtin, replicas: 2 }), false);
});

t.test("a window not yet observed in full shrinks nothing (an operator that just started)", async (t) => {
  const tr = trace("load-stops");
  const idle = tr.samples.slice(20, 26); // 200 s to 250 s: no load, 50 s of history only
  const d = decideAutoscaling({ now: idle.at(-1)?.at ?? 0, ...(tr.slo ? { slo: tr.slo } : {}), ...(tr.enginePool ? { enginePool: tr.enginePool } : {}), toolPools: tr.toolPools, window: idle });
  t.same(d.pools.map((p) => [p.name, p.desired]), [["qwen", 3], ["search", 6]]);
  t.match(d.pools[1]?.reason ?? "", "waiting out the 120 s stabilization window");
});

t.test("bounds are respected", async (t) => {
  const { changes, final } = replay(trace("burst-beyond-bounds"));
  t.same(final, { qwen: 3, search: 5 }, "a burst wanting 129 runners and 6 engines (540 sessions, 516 of them on tool calls) gets maxReplicas");
  t.same(changes.map((c) => [c.name, c.current, c.desired]), [["qwen", 1, 2], ["search", 2, 5], ["qwen", 2, 3]], "the engine pool goes to its minimum first, then to its maximum");
  t.match(changes[0]?.reason ?? "", "below minReplicas 2");
  t.match(changes[1]?.reason ?? "", "capped at maxReplicas 5");
  const tr = trace("burst-beyond-bounds");
  const above = decideAutoscaling({ now: tr.samples[0]?.at ?? 0, enginePool: { name: "qwen", replicas: 6, autoscaling: { minReplicas: 1, maxReplicas: 3 } }, toolPools: [], window: tr.samples.slice(0, 1) });
  t.same(above.pools.map((p) => [p.desired, p.direction]), [[3, "down"]], "a pool above maxReplicas (max lowered) comes down at once");
  t.match(above.pools[0]?.reason ?? "", "above maxReplicas 3");
});

t.test("external mode, or no autoscaling: no decision", async (t) => {
  const tr = trace("tools-bottleneck");
  const external = { ...tr, enginePool: { name: "qwen", replicas: 1, autoscaling: { mode: "external" as const, maxReplicas: 4 } }, toolPools: tr.toolPools.map((p) => ({ ...p, autoscaling: { ...p.autoscaling, mode: "external" as const, maxReplicas: 16 } })) };
  const { ticks, changes } = replay(external);
  t.same(changes, []);
  t.ok(ticks.every((k) => k.decision.pools.length === 0), "no pool decided");
  t.equal(ticks.at(-1)?.decision.bottleneck, "tools", "the bottleneck is still named (for the metrics an external scaler reads)");
  const unscaled = replay({ ...tr, enginePool: { name: "qwen", replicas: 1 }, toolPools: tr.toolPools.map(({ autoscaling: _a, ...p }) => p) });
  t.same(unscaled.changes, [], "pools without spec.autoscaling are left alone");
});

t.test("a pool several apps use gets the most any of them wants, until an app stops renewing its want", async (t) => {
  const wants = new PoolWants(30_000);
  t.equal(wants.record("ToolPool/team/web", "team/a", 5, 0), 5);
  t.equal(wants.record("ToolPool/team/web", "team/b", 2, 1_000), 5, "b's 2 does not undo a's 5");
  t.equal(wants.record("ToolPool/team/other", "team/b", 1, 1_000), 1, "pools are apart");
  t.equal(wants.record("ToolPool/team/web", "team/b", 2, 40_000), 2, "a's want expired");
  wants.record("ToolPool/team/web", "team/a", 7, 41_000);
  wants.forget("team/a");
  t.equal(wants.record("ToolPool/team/web", "team/b", 3, 42_000), 3, "a deleted app's want is dropped at once");
});

t.test("runners follow the calls' offered load: no cut while the step's load needs three, one more before any call waits", async (t) => {
  // The autoscale bench's step and burst on three single-slot runners (cause 1 of its missed target): the
  // backlog rule alone saw at most 2 calls running, cut 3→2 after its 20 s window, and added runners only once calls queued.
  const tr = trace("runners-follow-offered-load");
  const { ticks, changes } = replay(tr);
  const pendingAt = (sec: number): number => tr.samples.find((s) => s.at === tr.samples[0]!.at + sec * 1000)?.tools["tools"]?.pending ?? -1;
  t.same(
    changes.map((c) => [c.t, c.current, c.desired]),
    [[38, 3, 4]],
    "0.9 calls/s × 2 s keeps 1.8 slots busy: 3 runners at 75%, none cut; at 1.3 calls/s, 4",
  );
  t.equal(pendingAt(38), 0, "no call waited when the fourth runner was asked for");
  t.equal(changes[0]?.reason, "scaled ToolPool tools 3→4: 1.3 calls/s × 2.0 s per call at 75% target, 0 calls pending, 3 running (1 per runner), p90 tool wait 0.0 s (budget 2.0 s)");
  t.match(ticks[15]?.decision.pools[0]?.reason ?? "", /^ToolPool tools stays at 3: 0\.9 calls\/s × 2\.0 s per call at 75% target, /, "the step's reason names its rate and call time");

  const noCounters = replay({ ...tr, samples: tr.samples.map((s) => ({ ...s, tools: { tools: { pending: s.tools["tools"]!.pending, ackPending: s.tools["tools"]!.ackPending, waitP90Ms: s.tools["tools"]!.waitP90Ms ?? 0 } } })) });
  t.same(noCounters.changes.map((c) => [c.t, c.current, c.desired]).slice(0, 2), [[20, 3, 2], [32, 2, 3]], "without the delivered counter: the backlog rule's cut at 20 s (at most 2 running), back to 3 once 3 run");
  t.notOk(noCounters.changes.some((c) => c.desired === 4 && pendingAt(c.t) === 0), "and no fourth runner before a call waits");
});

t.test("scale-down stays stabilised with offered load: the runners come down a whole window after the load stops", async (t) => {
  const tr = trace("runners-follow-offered-load");
  const last = tr.samples.at(-1)!;
  const quiet = Array.from({ length: 30 }, (_, i) => ({ at: last.at + (i + 1) * 2000, engines: [], tools: { tools: { pending: 0, ackPending: 0, delivered: (last.tools["tools"]?.delivered ?? 0) + last.tools["tools"]!.pending + last.tools["tools"]!.ackPending } } }));
  const { changes } = replay({ ...tr, samples: [...tr.samples, ...quiet] });
  const down = changes.filter((c) => c.direction === "down");
  // Calls last arrive by 60 s; the rate over 10 s is 0 from 72 s (the drained queue's deliveries count until then), and the window holds 4 until 20 s later.
  t.ok(down.length > 0 && down[0]!.t >= 60 + 20, `the first cut (${down[0]?.t} s) waits out the 20 s window after the load`);
  t.equal(down.at(-1)?.desired, 1, "down to minReplicas");
});

t.test("engines ask for one more at 80% of their sequences while sessions grow, before the last sequence is taken by a refused session", async (t) => {
  // Cause 2 of the bench's missed target: a second engine only once sessions wanted more sequences than there were.
  const { ticks, changes } = replay(trace("engine-headroom"));
  t.same(
    changes.map((c) => [c.t, c.kind, c.current, c.desired]),
    [[8, "EnginePool", 1, 2]],
    "at 4 of 4 sequences (3 of 4 is 75%, within the target); none queued; no third while the second starts, nor once ready (4 to 5 of 8)",
  );
  t.equal(changes[0]?.reason, "scaled EnginePool engines 1→2: 0 sessions queued, 1 generating on 4 sequences, KV 33% used, 64 tokens/s, 4 of 4 sequences held (up from 2), over the 80% target, 3 waiting on tools, 3 of them on running calls holding sequences");
  t.match(ticks[6]?.decision.pools[0], { current: 2, desired: 2 }, "4 of 4 ready sequences, the second engine starting: it meets the headroom");
  const flat = trace("engine-headroom");
  const fourOfFour = flat.samples[4]!;
  const full = replay({ ...flat, samples: flat.samples.slice(0, 5).map((s) => ({ ...s, engines: fourOfFour.engines, tools: fourOfFour.tools })) });
  t.same(full.changes.filter((c) => c.kind === "EnginePool"), [], "a pool seen only full, its sessions not growing, gets no headroom (as load-stops' 18 of 18)");
});

t.test("headroom counts a sequence held by a session whose call waits a moment for a runner", async (t) => {
  // Recorded by the autoscale bench: the rule counted that session as the tools' (3 of 4 wanted, within the 80% target)
  // and asked for the second engine one tick later, while the router refused the burst's sessions.
  const { changes } = replay(trace("headroom-call-pending"));
  const engines = changes.filter((c) => c.kind === "EnginePool");
  t.same(
    engines.map((c) => [c.t, c.current, c.desired]),
    [[8.04, 1, 2]],
    "the second engine at the tick the fourth sequence is taken (1 call pending, waits within the budget), not the next",
  );
  t.equal(engines[0]?.reason, "scaled EnginePool engines 1→2: 0 sessions queued, 0 generating on 4 sequences, KV 32% used, 88 tokens/s, 4 of 4 sequences held (up from 3), over the 80% target, 4 waiting on tools, 3 of them on running calls holding sequences");
  const heldUp = trace("headroom-call-pending");
  const slow = replay({ ...heldUp, samples: heldUp.samples.map((s) => ({ ...s, tools: { tools: { ...s.tools["tools"]!, waitP90Ms: 5000 } } })) });
  t.same(
    slow.changes.filter((c) => c.kind === "EnginePool" && c.t < 10).map((c) => c.t),
    [],
    "the same session waiting on a pool the tools hold up (p90 wait 5 s, over the 2 s budget) is the tools': no headroom at that tick",
  );
});

t.test("the backlog rule forecasts the pending calls' wait: calls queued behind busy runners are a backlog while the measured p90 wait (of calls that started) is still within the budget", async (t) => {
  // Recorded by the autoscale bench: the measured wait lags, so the rule tolerated pending calls and only the
  // offered-load rule's 10 s rate added runners, one at a time, while the burst's calls queued.
  const tr = trace("forecast-pending-wait");
  const { ticks, changes } = replay(tr);
  const at = (sec: number): number => ticks.findIndex((x) => Math.abs(x.t - sec) < 0.05);
  const burst = tr.samples[at(56.44)]!.tools["tools"]!;
  t.match(burst, { pending: 3, ackPending: 3 }, "3 calls pending, the 3 runners busy");
  t.ok(burst.waitP90Ms! <= 2000, "the measured p90 wait is within the 2 s budget");
  t.same(
    changes.map((c) => [Math.round(c.t), c.current, c.desired]),
    [[14, 1, 2], [20, 2, 3], [56, 3, 6]],
    "at 56.4 s runners for every outstanding call (3 pending + 3 running), where the offered load alone (1.4 calls/s × 2.1 s at 75%) asks for 4",
  );
  t.equal(changes.at(-1)?.reason, "scaled ToolPool tools 3→6: 1.4 calls/s × 2.1 s per call at 75% target, 3 calls pending, 3 running (1 per runner), p90 tool wait 0.1 s, last pending call's forecast wait 2.1 s (budget 2.0 s)");
  t.equal(ticks[at(56.44)]?.decision.bottleneck, "tools", "the forecast backlog makes the tools the bottleneck");

  const noCallTime = replay({ ...tr, samples: tr.samples.map((s) => ({ ...s, tools: { tools: { pending: s.tools["tools"]!.pending, ackPending: s.tools["tools"]!.ackPending, ...(s.tools["tools"]!.waitP90Ms !== undefined ? { waitP90Ms: s.tools["tools"]!.waitP90Ms } : {}) } } })) });
  t.same(
    noCallTime.changes.filter((c) => c.t > 50).map((c) => [c.t, c.current, c.desired]),
    [],
    "without the delivered counter there is no call time to forecast by: the measured wait within the budget tolerates the 3 pending calls",
  );
});

t.test("the samples kept cover every window a rule reads, even under a short stabilisation window", async (t) => {
  const short = boundsOf({ maxReplicas: 6, minReplicas: 1, scaleDownStabilizationSeconds: 20 });
  t.ok(windowMsOf(short) >= CALL_TIME_WINDOW_MS, `a 20 s stabilisation window keeps ${windowMsOf(short)} ms, enough for the ${CALL_TIME_WINDOW_MS} ms mean-call-time window`);
  t.equal(windowMsOf(boundsOf({ maxReplicas: 6, scaleDownStabilizationSeconds: 300 })), 300_000, "a longer stabilisation window is kept whole");
});

/**
 * @module Per-policy figures of the autoscale bench: SLO attainment (the
 * share of the trace's tasks that completed within the task-latency
 * objective; a task that failed counts as missed), replica-seconds per side,
 * scale decisions, cold starts and the task latency percentiles, and the
 * clairvoyant follower's replica-seconds on the same tasks (the floor a
 * scaler at the joint targets could reach; see `follower-bound.ts`).
 */
import { quantile, r3 } from "../lib/stats.js";
import { followerBound, type FollowerSetup } from "./follower-bound.js";
import type { PolicyRun } from "./run-policy.js";
import type { TaskParts, TaskResult } from "./task-client.js";

export interface PolicyResult {
  policy: string;
  slo_attainment: number;
  replica_seconds_engines: number;
  replica_seconds_tools: number;
  task_p90_ms: number;
  cold_starts: number;
  task_p50_ms: number;
  tasks: number;
  completed: number;
  scale_decisions: number;
  /** Spawn to ready, ms, over the run's cold starts (null: none). */
  cold_start_p50_ms: number | null;
  /** Replica-seconds of both sides over static-max's (null: no static run). */
  cost_vs_static: number | null;
  /** The clairvoyant follower's replica-seconds on this policy's tasks, per side. */
  follower_replica_seconds_engines: number;
  follower_replica_seconds_tools: number;
  /** The follower's replica-seconds over static-max's (null: no static run): the cost floor at the joint targets. */
  follower_cost_vs_static: number | null;
  /** Both sides' replica-seconds of the follower held through the scale-down window (`holdMs`). */
  follower_held_replica_seconds: number;
  /** Those over static-max's (null: no static run): the floor with the window. */
  follower_held_cost_vs_static: number | null;
}

type Uncosted = Omit<PolicyResult, "cost_vs_static" | "follower_cost_vs_static" | "follower_held_cost_vs_static">;

/** `follower.holdMs` is the pools' scale-down window, for the held floor (the plain floor holds nothing). */
export function summarize(run: PolicyRun, sloMs: number, follower: Omit<FollowerSetup, "endMs">): Uncosted {
  const ok = run.tasks.filter((x) => x.ok && x.taskMs !== undefined);
  const within = ok.filter((x) => x.taskMs! <= sloMs).length;
  const latency = ok.map((x) => x.taskMs!);
  const ready = run.coldStarts.flatMap((c) => (c.readyMs !== undefined ? [c.readyMs] : []));
  const floor = followerBound(run.tasks, { ...follower, endMs: run.endMs, holdMs: 0 });
  const held = followerBound(run.tasks, { ...follower, endMs: run.endMs });
  return {
    policy: run.policy,
    slo_attainment: run.tasks.length === 0 ? 0 : r3(within / run.tasks.length),
    replica_seconds_engines: Math.round(run.engineReplicaSeconds),
    replica_seconds_tools: Math.round(run.runnerReplicaSeconds),
    task_p90_ms: Math.round(quantile(latency, 0.9)),
    cold_starts: run.coldStarts.length,
    task_p50_ms: Math.round(quantile(latency, 0.5)),
    tasks: run.tasks.length,
    completed: ok.length,
    scale_decisions: run.decisions.length,
    cold_start_p50_ms: ready.length === 0 ? null : Math.round(quantile(ready, 0.5)),
    follower_replica_seconds_engines: Math.round(floor.engineSeconds),
    follower_replica_seconds_tools: Math.round(floor.runnerSeconds),
    // Rounded per side as the plain floor is, so the held floor is never below it by rounding.
    follower_held_replica_seconds: Math.round(held.engineSeconds) + Math.round(held.runnerSeconds),
  };
}

/** Adds each policy's cost, and its follower's, relative to static-max's (both sides' replica-seconds together). */
export function withCost(results: Uncosted[]): PolicyResult[] {
  const base = results.find((r) => r.policy === "static");
  const staticTotal = base === undefined ? 0 : base.replica_seconds_engines + base.replica_seconds_tools;
  const share = (x: number): number | null => (staticTotal === 0 ? null : r3(x / staticTotal));
  return results.map((r) => ({
    ...r,
    cost_vs_static: share(r.replica_seconds_engines + r.replica_seconds_tools),
    follower_cost_vs_static: share(r.follower_replica_seconds_engines + r.follower_replica_seconds_tools),
    follower_held_cost_vs_static: share(r.follower_held_replica_seconds),
  }));
}

export interface TargetCheck {
  target: string;
  met: boolean;
  /** What was measured, in words. */
  measured: string;
}

/**
 * The targets for the joint scaler: at least 95% of tasks within the
 * SLO, at most 60% of static-max's replica-seconds, and a better SLO
 * attainment than engine-only scaling (which matters where the tools are the
 * bottleneck). A target whose runs are missing is left out.
 */
export function checkTargets(results: readonly PolicyResult[]): TargetCheck[] {
  const joint = results.find((r) => r.policy === "joint");
  if (joint === undefined) return [];
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
  const checks: TargetCheck[] = [{ target: "joint keeps ≥ 95% of tasks within the SLO", met: joint.slo_attainment >= 0.95, measured: pct(joint.slo_attainment) }];
  if (joint.cost_vs_static !== null) {
    const floor =
      joint.follower_cost_vs_static === null || joint.follower_held_cost_vs_static === null
        ? ""
        : ` (the clairvoyant follower at its targets: ${pct(joint.follower_cost_vs_static)}; held through the scale-down window: ${pct(joint.follower_held_cost_vs_static)})`;
    checks.push({ target: "joint uses ≤ 60% of static-max's replica-seconds", met: joint.cost_vs_static <= 0.6, measured: `${pct(joint.cost_vs_static)}${floor}` });
  }
  const engineOnly = results.find((r) => r.policy === "engine-only");
  if (engineOnly !== undefined) {
    checks.push({ target: "joint beats engine-only on SLO attainment", met: joint.slo_attainment > engineOnly.slo_attainment, measured: `${pct(joint.slo_attainment)} vs ${pct(engineOnly.slo_attainment)}` });
  }
  return checks;
}

/** Each part's median over the ok tasks (null: none completed). */
export function medianParts(tasks: readonly TaskResult[]): TaskParts | null {
  const parts = tasks.flatMap((t) => (t.parts !== undefined ? [t.parts] : []));
  if (parts.length === 0) return null;
  const m = (k: keyof TaskParts): number => quantile(parts.map((p) => p[k]), 0.5);
  return { openMs: m("openMs"), ttftMs: m("ttftMs"), decodeMs: m("decodeMs"), prefillMs: m("prefillMs"), toolMs: m("toolMs"), restMs: m("restMs"), decodedTokens: m("decodedTokens") };
}

/** The JSON's rounded parts. */
export function partsJson(p: TaskParts): Record<string, number> {
  return { open_ms: Math.round(p.openMs), ttft_ms: Math.round(p.ttftMs), decode_ms: Math.round(p.decodeMs), prefill_ms: Math.round(p.prefillMs), tool_ms: Math.round(p.toolMs), rest_ms: Math.round(p.restMs), decoded_tokens: p.decodedTokens };
}

export function describeParts(p: TaskParts | null): string {
  if (p === null) return "no task completed";
  return `open ${Math.round(p.openMs)}, first token ${Math.round(p.ttftMs)}, decode ${Math.round(p.decodeMs)} (${p.decodedTokens} tokens), injected results ${Math.round(p.prefillMs)}, tool round trips ${Math.round(p.toolMs)}, rest ${Math.round(p.restMs)}`;
}

/**
 * One line per task that missed the SLO, in arrival order: when it arrived,
 * how long it waited for its session to open (a sequence: the router's hold
 * and the retried 429/503s), then its first token, decode, tool round trips
 * and total, s. Says which waits made a task miss, and when.
 */
export function describeMisses(tasks: readonly TaskResult[], sloMs: number): string[] {
  const s = (ms: number): string => (ms / 1000).toFixed(1);
  return tasks
    .filter((t) => !t.ok || (t.taskMs ?? Infinity) > sloMs)
    .map((t) =>
      t.parts === undefined || t.taskMs === undefined
        ? `  arrived ${s(t.atMs)} s: failed (${t.error ?? "?"})`
        : `  arrived ${s(t.atMs)} s: waited ${s(t.parts.openMs)} s to open (${t.retries} retries), first token ${s(t.parts.ttftMs)} s, decode ${s(t.parts.decodeMs)} s, tools ${s(t.parts.toolMs)} s, total ${s(t.taskMs)} s`,
    );
}

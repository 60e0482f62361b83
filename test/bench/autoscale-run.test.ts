/**
 * `npm run bench -- autoscale` end to end on a tiny configuration: a
 * 20-second trace on the tiny test model, every policy on its own stack of
 * real processes (nats-server, router, engines, tool runners). Checks the
 * JSON interface the issue fixes, that each policy ran its tasks, that the
 * chart was written, and that static-max kept its processes for the whole
 * trace while the scaling policies started at their minimum.
 */
import t from "tap";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

t.setTimeout(1_200_000);

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");

interface Result {
  policy: string;
  slo_attainment: number;
  replica_seconds_engines: number;
  replica_seconds_tools: number;
  task_p90_ms: number;
  cold_starts: number;
  tasks: number;
  completed: number;
  follower_replica_seconds_engines: number;
  follower_replica_seconds_tools: number;
  follower_held_replica_seconds: number;
  follower_cost_vs_static: number | null;
  follower_held_cost_vs_static: number | null;
}

interface Run {
  policy: string;
  end_ms: number;
  replicas_engines: { at_ms: number; replicas: number }[];
  replicas_tools: { at_ms: number; replicas: number }[];
  ticks: unknown[];
  tasks: { ok: boolean; task_ms: number | null; parts?: Record<"open_ms" | "ttft_ms" | "decode_ms" | "prefill_ms" | "tool_ms" | "rest_ms" | "decoded_tokens", number> }[];
}

t.test("a tiny trace through every policy writes the results JSON and chart", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "bench-autoscale-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const json = join(dir, "autoscale.json");
  const args = [
    "--import", "tsx", "bench/main.ts", "autoscale",
    "--model-preset", "test", "--duration", "20", "--base-rate", "0.2", "--step-rate", "0.5", "--burst-rate", "1", "--seed", "3",
    "--calls", "2", "--tool-ms", "400", "--think-tokens", "4", "--max-engines", "2", "--max-runners", "2", "--sequences", "2",
    "--stabilization-s", "5", "--tick-ms", "500", "--slo-task-p90-ms", "30000", "--json", json,
  ];
  const stdout = await new Promise<string>((done, fail) =>
    execFile(process.execPath, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LOG_LEVEL: "warn" } }, (err, out, errOut) =>
      err ? fail(new Error(`${err.message}\n${out.slice(-3000)}\n${errOut.slice(-3000)}`)) : done(out),
    ),
  );
  t.match(stdout, /\| policy \| SLO attainment \|/, "prints the table");

  const out = JSON.parse(readFileSync(json, "utf8")) as { results: Result[]; config: Record<string, unknown>; targets: { target: string; met: boolean }[]; runs: Run[] };
  t.same(out.results.map((r) => r.policy), ["static", "engine-only", "joint"], "each policy, in order");
  for (const r of out.results) {
    for (const k of ["slo_attainment", "replica_seconds_engines", "replica_seconds_tools", "task_p90_ms", "cold_starts"] as const) t.type(r[k], "number", `${r.policy}.${k} is a number`);
    t.ok(r.slo_attainment >= 0 && r.slo_attainment <= 1, `${r.policy}: attainment is a share`);
    t.ok(r.tasks > 0, `${r.policy}: the trace sent tasks`);
    t.ok(r.completed > 0, `${r.policy}: and some completed (${r.completed}/${r.tasks})`);
    t.ok(r.replica_seconds_engines > 0 && r.replica_seconds_tools > 0, `${r.policy}: both sides cost something`);
    // The clairvoyant follower keeps at least the minimum (1 each) and at most the maximum (2 each) for the run; holding only adds.
    const follower = r.follower_replica_seconds_engines + r.follower_replica_seconds_tools;
    const end = out.runs.find((x) => x.policy === r.policy)!.end_ms / 1000;
    t.ok(follower >= 2 * end - 2 && follower <= 4 * end + 2, `${r.policy}: the follower's ${follower} replica-seconds lie within the bounds over ${end.toFixed(0)} s`);
    t.ok(r.follower_held_replica_seconds >= follower, `${r.policy}: holding through the window costs no less`);
    t.ok(typeof r.follower_cost_vs_static === "number" && typeof r.follower_held_cost_vs_static === "number", `${r.policy}: both floors against static`);
  }
  t.match(stdout, /The follower is the cost floor/, "says what the follower is");
  t.match(out.targets.find((c) => /60%/.test(c.target)), { measured: /clairvoyant follower at its targets: \d+\.\d%; held through the scale-down window: \d+\.\d%/ }, "the cost target quotes both floors");
  t.equal(new Set(out.results.map((r) => r.tasks)).size, 1, "the same arrivals for every policy");
  t.match(out.config, { duration_s: 20, seed: 3, slo_task_p90_ms: 30000, model_preset: "test", policies: ["static", "engine-only", "joint"] });

  t.equal(out.targets.length, 3, "the issue's three targets checked for joint");
  const fixed = out.runs.find((r) => r.policy === "static")!;
  t.same(fixed.replicas_engines[0], { at_ms: 0, replicas: 2 }, "static starts at max engines");
  t.same(fixed.replicas_tools[0], { at_ms: 0, replicas: 2 }, "and max runners");
  const staticResult = out.results.find((r) => r.policy === "static")!;
  t.ok(Math.abs(staticResult.replica_seconds_engines - (2 * fixed.end_ms) / 1000) <= 1, "static: max engines for the whole run");
  t.equal(staticResult.cold_starts, 0, "static starts nothing during the trace");
  for (const policy of ["engine-only", "joint"]) {
    const r = out.runs.find((x) => x.policy === policy)!;
    t.same(r.replicas_engines[0], { at_ms: 0, replicas: 1 }, `${policy} starts at min engines`);
    t.ok(r.ticks.length > 5, `${policy}: the scaler sampled the live signals (${r.ticks.length} ticks)`);
  }
  for (const r of out.runs) {
    const ok = r.tasks.filter((x) => x.ok);
    t.ok(ok.every((x) => x.parts !== undefined), `${r.policy}: every completed task says where its time went`);
    // Two chained 400 ms sleeps per task: their round trips cannot be shorter than the sleeps.
    t.ok(ok.every((x) => x.parts!.tool_ms >= 2 * 400 - 5), `${r.policy}: tool round trips cover the tools' own time`);
    // The open wait, the first token and the calls' round trips follow one another (decoding overlaps a call's start).
    t.ok(ok.every((x) => x.parts!.decoded_tokens > 0 && x.parts!.open_ms + x.parts!.ttft_ms + x.parts!.tool_ms <= x.task_ms! + 2 && x.parts!.decode_ms <= x.task_ms!), `${r.policy}: the parts fit in the task`);
  }
  const svg = readFileSync(join(dir, "autoscale.svg"), "utf8");
  t.match(svg, /^<svg/, "the chart");
});

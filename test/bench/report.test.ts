import t from "tap";
import { aggregate, markdownTable, pairedSpeedup } from "../../bench/bfcl/report.js";
import type { TaskRun } from "../../bench/bfcl/session-modes.js";
import { attemptRun, partitionOutcomes } from "../../bench/bfcl/task-attempt.js";

function run(taskId: string, mode: TaskRun["mode"], e2eMs: number): TaskRun {
  return {
    taskId,
    mode,
    e2eMs,
    tokensGenerated: 10,
    tokensPrefilled: 0,
    interrupts: 1,
    traps: 0,
    trapDecisions: { keep: 0, swap: 0, recompute: 0 },
    tpotMs: 10,
    calls: 1,
    scripted: true,
  };
}

t.test("paired speedup uses only the tasks that succeeded in both modes", async (t) => {
  // sync: a 100, b 200, c 900; async succeeded on a and b only (c failed).
  // Unpaired: sync p50 (nearest rank of 3) = 200 over async p50 of {50, 100} = 50 → 4x, flattered by c.
  // Paired over {a, b}: sync p50 = 100, async p50 = 50 → 2x.
  const sync = [run("a", "sync", 100), run("b", "sync", 200), run("c", "sync", 900)];
  const asyncRuns = [run("a", "async", 50), run("b", "async", 100)];
  t.same(pairedSpeedup(sync, asyncRuns), { speedup: 2, tasks: 2 });
  // The baseline against itself is 1 over every task.
  t.same(pairedSpeedup(sync, sync), { speedup: 1, tasks: 3 });
});

t.test("aggregate counts failures, keeps their reasons and pairs the ratios", async (t) => {
  const sync = [run("a", "sync", 100), run("b", "sync", 200)];
  const asyncRuns = [run("a", "async", 50)];
  // Bounds exist where async succeeded: a → 40 ms. b's bound is unknown (async failed there).
  const bounds = new Map([["a", 40]]);
  const row = aggregate("parallel", "async", asyncRuns, [{ taskId: "b", mode: "async", reason: "b/async: 1 calls dispatched, task has 2" }], bounds, sync);
  t.equal(row.tasks, 1);
  t.equal(row.failed, 1);
  t.same(row.failures, [{ taskId: "b", reason: "b/async: 1 calls dispatched, task has 2" }]);
  t.equal(row.speedup_vs_sync, 2, "100 / 50 over task a only");
  t.equal(row.paired_tasks, 1);
  t.equal(row.bound_ratio, 1.25, "50 / 40");
  const syncRow = aggregate("parallel", "sync", sync, [], bounds, sync);
  t.equal(syncRow.bound_ratio, 2.5, "only a has a bound: 100 / 40");
  const table = markdownTable([syncRow, row]);
  t.match(table, /\| parallel \| async \| 1 \| 1 \| 50 \|/, "failed column beside the successes");
  t.match(table, /\| 2\.00x \| 40 \|/, "async ran only where it is paired: no note");
  // A mode that succeeded where sync failed: its speedup rests on fewer tasks than its row, and says so.
  const wider = aggregate("parallel", "syncParallel", [run("a", "syncParallel", 80), run("z", "syncParallel", 70)], [], bounds, sync);
  t.equal(wider.paired_tasks, 1);
  t.match(markdownTable([wider]), /1\.25x \(1 paired\)/);
});

t.test("a mode that failed everywhere yields an empty row, not a crash", async (t) => {
  const row = aggregate("multistep", "syncParallel", [], [{ taskId: "m0", mode: "syncParallel", reason: "boom" }], new Map(), [run("m0", "sync", 10)]);
  t.equal(row.tasks, 0);
  t.equal(row.failed, 1);
  t.ok(Number.isNaN(row.p50_ms));
  t.equal(row.paired_tasks, 0);
});

t.test("attemptRun records an error and a time limit as failures with reasons", async (t) => {
  const ok = await attemptRun("p0", "sync", 1000, async () => run("p0", "sync", 5));
  const thrown = await attemptRun("p9", "sync", 1000, async () => {
    throw new Error("p9/sync: 1 calls dispatched, task has 2");
  });
  let stopped = false;
  const hung = await attemptRun("p1", "async", 20, (signal) =>
    new Promise<TaskRun>((_resolve, reject) => {
      signal.addEventListener("abort", () => {
        stopped = true;
        reject(new Error("aborted"));
      });
    }),
  );
  t.ok(stopped, "the run was told to stop at the limit");
  const { runs, failed } = partitionOutcomes([ok, thrown, hung]);
  t.same(runs, [run("p0", "sync", 5)]);
  t.same(failed, [
    { taskId: "p9", mode: "sync", reason: "p9/sync: 1 calls dispatched, task has 2" },
    { taskId: "p1", mode: "async", reason: "timed out after 20 ms" },
  ]);
});

/** The same-work pairs: only tasks where the model made the same calls (any order, same arguments) are compared. */
import t from "tap";
import { sameWork } from "../../bench/bfcl/same-work.js";
import type { TaskRun } from "../../bench/bfcl/session-modes.js";

const run = (taskId: string, mode: TaskRun["mode"], e2eMs: number, calls: [string, Record<string, unknown>][]): TaskRun =>
  ({ taskId, mode, e2eMs, modelCalls: calls.map(([tool, args], i) => ({ id: `c${i}`, tool, arguments: args })) }) as unknown as TaskRun;

t.test("pairs the tasks with the same calls and takes the median per-task ratio", async (t) => {
  const sync = [
    run("a", "sync", 2000, [["w", { city: "Paris" }], ["w", { city: "Rome" }]]),
    run("b", "sync", 900, [["w", { city: "Oslo" }]]), // stopped after one call
    run("c", "sync", 3000, [["x", { n: 1, m: 2 }]]),
    run("d", "sync", 1000, [["y", {}]]), // no async run of d
  ];
  const async = [
    run("a", "async", 1000, [["w", { city: "Rome" }], ["w", { city: "Paris" }]]), // same calls, other order: 2.0x
    run("b", "async", 1800, [["w", { city: "Oslo" }], ["w", { city: "Bergen" }]]), // more work: left out
    run("c", "async", 2000, [["x", { m: 2, n: 1 }]]), // same arguments, other key order: 1.5x
  ];
  const w = sameWork(sync, async);
  t.equal(w.paired, 3, "tasks run in both modes");
  t.equal(w.tasks, 2, "of which two made the same calls");
  t.equal(w.medianRatio, 1.75);
  t.equal(w.minRatio, 1.5);
  t.equal(w.maxRatio, 2);
});

t.test("no task with the same calls: NaN, not a ratio", async (t) => {
  const w = sameWork([run("a", "sync", 1, [["w", { city: "Paris" }]])], [run("a", "async", 1, [["w", { city: "Lyon" }]])]);
  t.equal(w.tasks, 0);
  t.ok(Number.isNaN(w.medianRatio));
});

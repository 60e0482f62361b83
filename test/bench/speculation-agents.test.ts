/**
 * The speculation bench's agents: a task that fails is recorded with its
 * reason and the run goes on with the next task (one failure used to abort
 * the whole run); paired figures keep only tasks that succeeded in every mode.
 */
import t from "tap";
import { pairedRuns, runAgents } from "../../bench/speculation/run-agents.js";

t.test("a failed task is recorded and the others still run", async (t) => {
  const tasks = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
  for (const agents of [1, 3]) {
    const { runs, failed } = await runAgents(tasks, agents, async (task) => {
      await new Promise((r) => setImmediate(r));
      if (task.id === "b") throw new Error("session ended error: boom");
      return { task };
    });
    t.same(runs.map((r) => r.task.id).sort(), ["a", "c", "d", "e"], `${agents} agents: every other task ran`);
    t.same(failed, [{ taskId: "b", reason: "session ended error: boom" }]);
  }
});

t.test("paired runs: only the tasks that succeeded in every mode", async (t) => {
  const run = (id: string) => ({ task: { id } });
  const paired = pairedRuns(new Map([["none", [run("a"), run("b"), run("c")]], ["client", [run("a"), run("c")]], ["client+engine", [run("c"), run("a"), run("b")]]]));
  t.same([...paired].map(([mode, runs]) => [mode, runs.map((r) => r.task.id)]), [["none", ["a", "c"]], ["client", ["a", "c"]], ["client+engine", ["c", "a"]]]);
});

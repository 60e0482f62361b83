/**
 * @module The accuracy table's rows: accuracy with its Wilson interval, the
 * invalid-call rate with the grammar on and off (grammar-off runs feed only
 * the latter; the native format, which has no call grammar, reports its rate
 * as a grammar-off one), EOS share, and failures grouped by cause.
 */
import t from "tap";
import { aggregateRuns, failureCause, type ScoredRun } from "../../bench/accuracy/report.js";

const run = (over: Partial<ScoredRun>): ScoredRun => ({
  taskId: "t",
  category: "simple",
  model: "finetuned",
  format: "cmlAsync",
  grammar: true,
  valid: true,
  calls: 1,
  expectedCalls: 1,
  invalidCalls: 0,
  latencyMs: 100,
  tokensGenerated: 10,
  eos: true,
  endReason: "eos",
  ...over,
});

t.test("CML rows: grammar-on and grammar-off rates apart, failures by cause", async (t) => {
  const runs = [
    run({ taskId: "a" }),
    run({ taskId: "b", valid: false, error: "wrong_count", calls: 1, expectedCalls: 2, cause: failureCause({ error: "wrong_count", calls: 1, expectedCalls: 2 }), invalidCalls: 1, eos: false }),
    run({ taskId: "a", grammar: false, invalidCalls: 3, calls: 1 }),
  ];
  const [row] = aggregateRuns(runs, ["cmlAsync"]).filter((r) => r.category === "simple");
  t.match(row, { tasks: 2, accuracy: 0.5, eos_rate: 0.5, invalid_call_rate: 0.333, invalid_call_rate_no_grammar: 0.75 });
  t.equal(row!.failures.missing_call, 1);
  t.equal(row!.failures_never_stopped, 1);
  t.ok(row!.accuracy_ci95[0] < 0.5 && row!.accuracy_ci95[1] > 0.5, "the interval holds the estimate");
});

t.test("the native row has no grammar: its invalid-call rate is a grammar-off one", async (t) => {
  const [row] = aggregateRuns([run({ format: "native", invalidCalls: 1, calls: 3 })], ["native"]);
  t.equal(row!.invalid_call_rate, null, "nothing constrained it");
  t.equal(row!.invalid_call_rate_no_grammar, 0.25);
});

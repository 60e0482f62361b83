/**
 * The benches' runner log: a real tool runner process writes its log lines
 * into the bench's file, and a call it drops (no usable reply address, the
 * cause of the 60 s stalls a namespace mismatch once gave the bfcl bench)
 * shows in the one-line summary instead of only as slow tasks.
 */
import t from "tap";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { spawnToolRunner } from "../../hack/stack.js";
import { runnerLogCounts, runnerLogFile, summarizeRunnerLog } from "../../bench/lib/runner-log.js";
import { toolSubject } from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { poolConfig, POOL } from "../nats/fixtures.js";

t.test("counts warn-and-up lines by message and ignores the rest", async (t) => {
  const text = [
    JSON.stringify({ level: 30, msg: "toolrunner ready port=1" }),
    JSON.stringify({ level: 40, msg: "call without a usable reply address dropped" }),
    "not json",
    "{broken",
    JSON.stringify({ level: 40, msg: "call without a usable reply address dropped" }),
    JSON.stringify({ level: 50, msg: "unexpected error handling a call; it will be redelivered" }),
  ].join("\n");
  t.same([...runnerLogCounts(text)], [
    ["warn: call without a usable reply address dropped", 2],
    ["error: unexpected error handling a call; it will be redelivered", 1],
  ]);
  const dir = mkdtempSync(join(tmpdir(), "runner-log-"));
  const quiet = join(dir, "quiet.log");
  writeFileSync(quiet, JSON.stringify({ level: 30, msg: "info only" }) + "\n");
  t.equal(summarizeRunnerLog(quiet), "tool runners logged no warnings or errors");
  t.equal(summarizeRunnerLog(join(dir, "never-written.log")), "tool runners logged no warnings or errors");
});

t.test("a real runner's dropped call reaches the bench's summary", async (t) => {
  const nats = await startNatsServer(t);
  const logFile = runnerLogFile("test");
  const runner = await spawnToolRunner(nats.url, poolConfig(), "log-test-0", {}, logFile);
  t.teardown(() => runner.stop("SIGKILL"));
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  // A call with no routing headers: the runner can answer nobody, so it drops it and says so.
  await jetstream(nc).publish(toolSubject(POOL, "echo"), JSON.stringify({ text: "hi" }));
  const deadline = Date.now() + 20_000;
  while (!summarizeRunnerLog(logFile).includes("dropped") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const summary = summarizeRunnerLog(logFile);
  t.match(summary, /^tool runners logged 1 × warn: call without a usable reply address dropped \(lines in .*\)$/);
  t.ok(summary.includes(logFile), "the summary says where the lines are");
});

/**
 * Load through a real nats-server: 200 concurrent sessions × 5 calls through
 * one NATS executor and two tool runners. Every call must come back once,
 * with its own output; nothing lost, nothing duplicated. (Latency is the
 * benchmark's business: `npm run bench -- nats`.)
 */
import t from "tap";
import { runLoad } from "../../bench/nats/load.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { counterValue, POOL, poolConfig, startExecutor, startRunner } from "./fixtures.js";

t.test("200 sessions × 5 calls through one executor and two runners", async (t) => {
  const server = await startNatsServer(t);
  const config = poolConfig({ concurrency: 128 });
  const r1 = await startRunner(t, server.url, config, { runnerId: "r1" });
  const r2 = await startRunner(t, server.url, config, { runnerId: "r2" });
  const executor = await startExecutor(t, server.url);

  const report = await runLoad(executor, { sessions: 200, callsPerSession: 5, toolMs: 2, pool: POOL });
  t.equal(report.calls, 1000);
  t.equal(report.completed, 1000, "every call completed with its own output");
  t.equal(report.lost, 0, `nothing lost (${JSON.stringify(report.errors)})`);
  t.equal(report.duplicated, 0, "nothing duplicated");
  t.equal(await counterValue(executor.metrics.droppedCompletions), 0, "no completion dropped");
  const handled = [await counterValue(r1.metrics.calls), await counterValue(r2.metrics.calls)];
  t.equal(handled[0]! + handled[1]!, 1000, "each call ran once");
  t.ok(handled[0]! > 0 && handled[1]! > 0, `both runners served (${handled.join(" + ")})`);
  t.equal(executor.inFlight, 0, "nothing left pending");
});

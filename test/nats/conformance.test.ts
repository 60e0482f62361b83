/**
 * The shared Executor conformance suite, run against the NATS executor with
 * a real nats-server and an in-process tool runner serving the builtin tools.
 */
import t from "tap";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import type { RunnerToolSpec } from "../../common/src/protocol/index.js";
import { executorConformance } from "../executor/conformance.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { log, POOL, poolConfig } from "./fixtures.js";
import { NatsExecutor } from "../../engine-pod/src/executor/nats-executor.js";
import { ToolRunner } from "../../toolrunner/src/runner.js";

t.test("NATS executor conformance", async (t) => {
  const server = await startNatsServer(t);
  const tools: RunnerToolSpec[] = builtinToolSpecs().map((spec) => ({ ...spec, implementation: { type: "builtin" } }));
  let n = 0;
  executorConformance(t, {
    spec: (s) => ({ ...s, pool: POOL }),
    create: async () => {
      const runner = await ToolRunner.start({ servers: server.url, config: poolConfig({ tools }), log, heartbeatMs: 500, pullExpiresMs: 1_000, drainTimeoutMs: 200 });
      const executor = await NatsExecutor.connect({ servers: server.url, namespace: POOL.namespace, enginePod: `conformance-${++n}`, log });
      return { executor, teardown: () => runner.stop() };
    },
  });
});

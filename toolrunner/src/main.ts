/**
 * @module `npm run toolrunner -- --spec-file tools.yaml [--nats-url URL]
 * [--port 8080]`: the ToolPool pod entrypoint. Serves /healthz, /readyz and
 * /metrics, runs the pool's tools until SIGTERM, then stops fetching,
 * finishes in-flight calls and drains. Prints `toolrunner ready port=<n>` on
 * stdout once serving (the local stack and tests wait for it).
 */
import { createLogger, serveProbes, Shutdown } from "../../common/src/index.js";
import { ToolRunnerMetrics } from "./metrics.js";
import { parseToolRunnerOptions } from "./options.js";
import { ToolRunner } from "./runner.js";
import { loadRunnerConfig } from "./spec-file.js";
import { natsSecurityFromEnv } from "../../common/src/security/nats-connect.js";
import { requireCredentials } from "../../common/src/security/credential-files.js";

const log = createLogger("toolrunner");
try {
  // Fail closed (INTERLACE_AUTH=required): without its NATS identity a runner does not start.
  requireCredentials(["NatsCreds"]);
  const options = parseToolRunnerOptions();
  const config = loadRunnerConfig(options.specFile);
  const metrics = new ToolRunnerMetrics(undefined, true);
  // Past the drain window, closing takes a moment more; then the process exits regardless.
  const shutdown = new Shutdown(log, options.drainTimeoutMs + 3_000);
  shutdown.installSignalHandlers();
  let runner: ToolRunner | null = null;
  const probes = await serveProbes(
    options.port,
    { registry: metrics.registry, notReadyReason: () => (runner === null ? "connecting to NATS" : runner.notReadyReason()) },
    options.host,
  );
  shutdown.add("probes", () => new Promise<void>((r) => probes.server.close(() => r())));
  runner = await ToolRunner.start({ servers: options.natsUrl, security: natsSecurityFromEnv(), config, runnerId: options.runnerId, log, metrics, heartbeatMs: options.heartbeatMs, drainTimeoutMs: options.drainTimeoutMs });
  shutdown.add("runner", () => runner?.stop());
  process.stdout.write(`toolrunner ready port=${probes.port} runner=${runner.runnerId}\n`);
} catch (err) {
  log.fatal({ err }, "tool runner failed to start");
  process.exit(1);
}

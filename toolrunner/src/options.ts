/**
 * @module The runner's process options, parsed once from flags over
 * environment (`--nats-url` / `NATS_URL`, ...). What tools run and how lives
 * in the spec file; these say where to find it and how to connect.
 */
import { hostname } from "node:os";
import { defaultSource, intOpt, optionalStringOpt, stringOpt, type Source } from "../../common/src/index.js";

export interface ToolRunnerProcessOptions {
  /** Comma-separated NATS URLs. */
  natsUrl: string[];
  /** The ToolPool spec file (YAML or JSON; see `ToolRunnerConfig`). */
  specFile: string;
  /** Port of /healthz, /readyz, /metrics (0 = a free one). */
  port: number;
  host: string;
  runnerId: string;
  heartbeatMs: number;
  /** On SIGTERM, how long in-flight calls may finish before they are handed back for redelivery (keep below the pod's terminationGracePeriodSeconds). */
  drainTimeoutMs: number;
}

export function parseToolRunnerOptions(src: Source = defaultSource()): ToolRunnerProcessOptions {
  const specFile = optionalStringOpt(src, "spec-file");
  if (specFile === undefined) throw new Error("--spec-file (SPEC_FILE) is required: the ToolPool's tools.yaml");
  return {
    natsUrl: stringOpt(src, "nats-url", "nats://127.0.0.1:4222").split(",").map((s) => s.trim()).filter(Boolean),
    specFile,
    port: intOpt(src, "port", 8080, { min: 0, max: 65535 }),
    host: stringOpt(src, "host", "0.0.0.0"),
    runnerId: stringOpt(src, "runner-id", process.env["POD_NAME"] ?? `${hostname()}-${process.pid}`),
    heartbeatMs: intOpt(src, "heartbeat-ms", 2_000, { min: 100 }),
    drainTimeoutMs: intOpt(src, "drain-timeout-ms", 25_000, { min: 0 }),
  };
}

/**
 * @module ToolPool → its children: a ConfigMap holding the tool runner's spec
 * file (common/src/protocol/runner-config.ts), the tool-runner Deployment
 * that mounts it, and a headless Service over the runners' `http` port (probes
 * and /metrics; calls themselves arrive over NATS). Pure functions; rendering can fail on a spec the runner
 * cannot execute, which is returned as a value (the reconciler turns it into
 * a Degraded condition).
 */
import { createHash } from "node:crypto";
import type { V1ConfigMap, V1Deployment, V1Service } from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { ToolRunnerConfig, RunnerToolSpec, ToolImplementation } from "../../../common/src/protocol/index.js";
import type { ToolSpec } from "../../../common/src/index.js";
import type { ToolDefinition, ToolPool } from "../api/index.js";
import { CONTAINER_SECURITY, HOME_ENV, natsEnv, POD_NAME_ENV, POD_PORT, POD_SECURITY, buildHeadlessService, childMeta, httpProbes, selectorLabels, type BuildOptions } from "./common.js";
import { credentialsWiring, type PodCredentials } from "./credentials.js";

export const TOOLRUNNER_COMPONENT = "toolrunner";
export const TOOLRUNNER_COMMAND = ["node", "dist/toolrunner/src/main.js"];
/** The ConfigMap key the runner reads (YAML). */
export const RUNNER_SPEC_KEY = "tools.yaml";
const SPEC_DIR = "/etc/interlace";

/** Name shared by the pool's Deployment, ConfigMap and Service. */
export function toolPoolChildName(pool: ToolPool): string {
  return `${pool.metadata.name ?? ""}-tools`;
}

/** A ToolPool tool as the model and the engine see it (no implementation details). */
export function toolSpecOf(t: ToolDefinition): ToolSpec {
  return {
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    ...(t.estimatedLatencyMs !== undefined ? { estimatedLatencyMs: t.estimatedLatencyMs } : {}),
    ...(t.speculative !== undefined ? { speculative: t.speculative } : {}),
    ...(t.idempotent !== undefined ? { idempotent: t.idempotent } : {}),
  };
}

/** A rendered runner config, or why the spec cannot run. */
export type RenderResult = { ok: true; config: ToolRunnerConfig } | { ok: false; message: string };

function implementationOf(tool: ToolDefinition): ToolImplementation | string {
  if (tool.builtin) return { type: "builtin", builtin: tool.builtin.name };
  if (tool.mcp) return { type: "mcp", url: tool.mcp.url, ...(tool.mcp.tool !== undefined ? { tool: tool.mcp.tool } : {}) };
  if (tool.http) return { type: "http", url: tool.http.url, method: tool.http.method ?? "POST", ...(tool.http.headers ? { headers: tool.http.headers } : {}) };
  return `tool ${tool.name} has no implementation (http, mcp or builtin)`;
}

/** The runner's spec file for a ToolPool. */
export function renderRunnerConfig(pool: ToolPool): RenderResult {
  const namespace = pool.metadata.namespace ?? "default";
  const name = pool.metadata.name ?? "";
  const tools: RunnerToolSpec[] = [];
  for (const t of pool.spec.tools) {
    const implementation = implementationOf(t);
    if (typeof implementation === "string") return { ok: false, message: implementation };
    tools.push({
      ...toolSpecOf(t),
      ...(t.http?.timeoutMs !== undefined ? { timeoutMs: t.http.timeoutMs } : {}),
      implementation,
    });
  }
  return {
    ok: true,
    config: {
      namespace,
      pool: name,
      tools,
      ...(pool.spec.concurrency !== undefined ? { concurrency: pool.spec.concurrency } : {}),
      ...(pool.spec.timeoutMs !== undefined ? { timeoutMs: pool.spec.timeoutMs } : {}),
      ...(pool.spec.retries !== undefined ? { retries: pool.spec.retries } : {}),
    },
  };
}

/** The ConfigMap with the runner spec file. */
export function buildToolSpecConfigMap(pool: ToolPool, config: ToolRunnerConfig): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: childMeta(pool, toolPoolChildName(pool), TOOLRUNNER_COMPONENT),
    data: { [RUNNER_SPEC_KEY]: stringify(config) },
  };
}

/** The tool-runner Deployment; a hash of the spec file in the pod template rolls runners when tools change. */
export function buildToolRunnerDeployment(pool: ToolPool, config: ToolRunnerConfig, opts: BuildOptions, creds?: PodCredentials): V1Deployment {
  const name = toolPoolChildName(pool);
  const wiring = credentialsWiring(creds);
  const instance = pool.metadata.name ?? "";
  const specHash = createHash("sha256").update(stringify(config)).digest("hex").slice(0, 16);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: childMeta(pool, name, TOOLRUNNER_COMPONENT),
    spec: {
      replicas: pool.spec.replicas ?? 1,
      selector: { matchLabels: selectorLabels(TOOLRUNNER_COMPONENT, instance) },
      template: {
        metadata: {
          labels: { ...selectorLabels(TOOLRUNNER_COMPONENT, instance), "interlace.dev/toolpool": instance },
          annotations: { "interlace.dev/spec-hash": specHash, ...wiring.annotations },
        },
        spec: {
          securityContext: POD_SECURITY,
          containers: [
            {
              name: "toolrunner",
              image: pool.spec.image ?? opts.image,
              ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
              command: TOOLRUNNER_COMMAND,
              args: [
                "--spec-file",
                `${SPEC_DIR}/${RUNNER_SPEC_KEY}`,
                "--nats-url",
                opts.natsUrl,
                "--port",
                String(POD_PORT),
                "--runner-id",
                "$(POD_NAME)",
              ],
              env: [POD_NAME_ENV, HOME_ENV, ...natsEnv(opts), ...wiring.env],
              ports: [{ name: "http", containerPort: POD_PORT, protocol: "TCP" }],
              ...httpProbes(),
              volumeMounts: [
                { name: "spec", mountPath: SPEC_DIR, readOnly: true },
                { name: "tmp", mountPath: "/tmp" },
                ...wiring.mounts,
              ],
              securityContext: CONTAINER_SECURITY,
            },
          ],
          volumes: [
            { name: "spec", configMap: { name } },
            { name: "tmp", emptyDir: {} },
            ...wiring.volumes,
          ],
        },
      },
    },
  };
}

/**
 * Headless Service over the runners: what a ServiceMonitor (port `http`)
 * selects to scrape each runner's /metrics.
 */
export function buildToolRunnerService(pool: ToolPool): V1Service {
  return buildHeadlessService(pool, toolPoolChildName(pool), TOOLRUNNER_COMPONENT);
}

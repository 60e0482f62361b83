/**
 * @module The tool runner's spec file: what a ToolPool pod runs. The operator
 * renders it from the ToolPool resource into a ConfigMap (key `tools.yaml`,
 * YAML or JSON) mounted at `--spec-file`; the runner validates it once at
 * start-up against {@link toolRunnerConfigSchema}.
 */
import type { JsonSchema, ToolSpec } from "../tools.js";

/** How a tool runs. */
export type ToolImplementation =
  | {
      type: "builtin";
      /** A name from `common/src/builtin-tools` (`echo`, `sleep`, `calculator`, `replay`); default: the tool's name. */
      builtin?: string;
      /**
       * `replay` only: recorded runs of this tool, matched by their arguments
       * (canonical JSON), so a recorded tool keeps its own name and schema
       * (benchmarks replay BFCL functions this way).
       */
      recordings?: ReplayRecording[];
      /** `replay` only: played when no recording matches a call's arguments (without it such a call fails). */
      fallback?: { output: string; latencyMs: number };
    }
  | {
      type: "http";
      /** Receives the arguments object as a JSON body; the response body is the output. */
      url: string;
      method?: "POST" | "PUT";
      headers?: Record<string, string>;
    }
  | {
      type: "mcp";
      /** A Model Context Protocol server's Streamable HTTP endpoint. */
      url: string;
      /** The tool's name on that server; default: the tool's name. */
      tool?: string;
      headers?: Record<string, string>;
    };

/** One recorded run of a tool, for the `replay` builtin. */
export interface ReplayRecording {
  arguments: Record<string, unknown>;
  output: string;
  latencyMs: number;
  /** A recorded failure: the tool fails with `output` as its message. */
  failed?: boolean;
}

/** One tool of the pool: its spec as the model sees it, plus how it runs. */
export interface RunnerToolSpec extends ToolSpec {
  implementation: ToolImplementation;
  /** Overrides the pool's `timeoutMs`. */
  timeoutMs?: number;
}

/** The whole file. Defaults are the runner's; flags do not override the file. */
export interface ToolRunnerConfig {
  /** The ToolPool's namespace and name (subject and stream parts). */
  namespace: string;
  pool: string;
  tools: RunnerToolSpec[];
  /** Calls one runner runs at once (default 16). */
  concurrency?: number;
  /** Default per-call timeout, ms (default 30000); a call's own deadline still wins when sooner. */
  timeoutMs?: number;
  /** Extra attempts for idempotent HTTP tools on 5xx / network errors (default 2). */
  retries?: number;
  /** Deliveries of a call before the engine is told it failed (`max_deliveries`; default 3). */
  maxDeliver?: number;
  /** How long a pulled call may go un-acked before it is redelivered (default 30000); runners extend it while working. */
  ackWaitMs?: number;
  /** Results longer than this (UTF-8 bytes) are truncated with a marker (default 65536). */
  maxResultBytes?: number;
}

export const RUNNER_DEFAULTS = {
  concurrency: 16,
  timeoutMs: 30_000,
  retries: 2,
  maxDeliver: 3,
  ackWaitMs: 30_000,
  maxResultBytes: 65_536,
} as const;

const HEADERS = { type: "object", additionalProperties: { type: "string" } } as const;
const NAME = { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63 } as const;

export const toolRunnerConfigSchema: JsonSchema = {
  type: "object",
  properties: {
    namespace: NAME,
    pool: NAME,
    concurrency: { type: "integer", minimum: 1, maximum: 1024 },
    timeoutMs: { type: "integer", minimum: 1 },
    retries: { type: "integer", minimum: 0, maximum: 10 },
    maxDeliver: { type: "integer", minimum: 1, maximum: 100 },
    ackWaitMs: { type: "integer", minimum: 500 },
    maxResultBytes: { type: "integer", minimum: 64 },
    tools: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        properties: {
          name: { type: "string", pattern: "^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$" },
          description: { type: "string" },
          parameters: { type: "object" },
          estimatedLatencyMs: { type: "number", minimum: 0 },
          speculative: { type: "boolean" },
          idempotent: { type: "boolean" },
          timeoutMs: { type: "integer", minimum: 1 },
          pool: { type: "object" },
          implementation: {
            oneOf: [
              {
                type: "object",
                properties: {
                  type: { const: "builtin" },
                  builtin: { type: "string" },
                  recordings: {
                    type: "array",
                    items: {
                      type: "object",
                      properties: {
                        arguments: { type: "object" },
                        output: { type: "string" },
                        latencyMs: { type: "integer", minimum: 0, maximum: 600000 },
                        failed: { type: "boolean" },
                      },
                      required: ["arguments", "output", "latencyMs"],
                      additionalProperties: false,
                    },
                  },
                  fallback: {
                    type: "object",
                    properties: { output: { type: "string" }, latencyMs: { type: "integer", minimum: 0, maximum: 600000 } },
                    required: ["output", "latencyMs"],
                    additionalProperties: false,
                  },
                },
                required: ["type"],
                additionalProperties: false,
              },
              {
                type: "object",
                properties: {
                  type: { const: "http" },
                  url: { type: "string", pattern: "^https?://" },
                  method: { enum: ["POST", "PUT"] },
                  headers: HEADERS,
                },
                required: ["type", "url"],
                additionalProperties: false,
              },
              {
                type: "object",
                properties: {
                  type: { const: "mcp" },
                  url: { type: "string", pattern: "^https?://" },
                  tool: { type: "string" },
                  headers: HEADERS,
                },
                required: ["type", "url"],
                additionalProperties: false,
              },
            ],
          },
        },
        required: ["name", "description", "parameters", "implementation"],
        additionalProperties: false,
      },
    },
  },
  required: ["namespace", "pool", "tools"],
  additionalProperties: false,
};

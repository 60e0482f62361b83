/**
 * @module ToolPool: tools and the runner pods that execute them (calls
 * arrive over NATS JetStream). Schema (with its CEL rules next to the
 * fields), TypeScript types and kubectl columns. The CRD YAML in `crds/` is
 * generated from this file.
 */
import type { JsonSchema } from "../../../common/src/index.js";
import { autoscalingSchema, autoscalingStatusSchema, type AutoscalingSpec, type AutoscalingStatus } from "./autoscaling.js";
import type { Condition } from "./conditions.js";
import { egressSchema, type EgressRule } from "./egress.js";
import { AGE_COLUMN, GROUP, READY_COLUMN, REASON_COLUMN, VERSION, type InterlaceObject, type KindDefinition } from "./kind.js";
import { bool, conditionsSchema, httpUrl, int, object, observedGenerationSchema, oneOf, str, type OpenApiSchema } from "./schema.js";

/** The tool runner sends the arguments as a JSON body, so only body-carrying methods. */
export const HTTP_METHODS = ["POST", "PUT"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Calls an HTTP endpoint with the arguments as a JSON body. */
export interface HttpImplementation {
  url: string;
  /** Default POST. */
  method?: HttpMethod;
  /** Per-call timeout; overrides the pool's `timeoutMs`. */
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/** Calls a tool on a Model Context Protocol server (streamable HTTP transport). */
export interface McpImplementation {
  url: string;
  /** Tool name on the MCP server (default: the tool's own name). */
  tool?: string;
}

/** Runs a tool compiled into the runner (see common/src/builtin-tools). */
export interface BuiltinImplementation {
  name: string;
}

/** One tool: exactly one of `http`, `mcp`, `builtin`. */
export interface ToolDefinition {
  /** Unique in the pool; `^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$` (TOOL_NAME_PATTERN). */
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: JsonSchema;
  /** Expected run time, shown to the model (LPT hint) and used by the trap handler. */
  estimatedLatencyMs?: number;
  /** Stateless and cheap: safe to start speculatively. Default false. */
  speculative?: boolean;
  /** Safe to retry. Default false. */
  idempotent?: boolean;
  http?: HttpImplementation;
  mcp?: McpImplementation;
  builtin?: BuiltinImplementation;
}

export interface ToolPoolSpec {
  tools: ToolDefinition[];
  /** Runner pods. Default 1. */
  replicas?: number;
  /** Calls one runner executes at once. Default 8. */
  concurrency?: number;
  /** Per-call timeout. Default 30000. */
  timeoutMs?: number;
  /** Retries of a failed idempotent call. Default 2. */
  retries?: number;
  /** Runner image override (default: the operator's configured image). */
  image?: string;
  /** Joint autoscaling against the SLOs of the apps using the pool (absent: `replicas` stays as written). */
  autoscaling?: AutoscalingSpec;
  /** Where the runners may connect besides NATS and DNS (the tools' servers), when per-pool NetworkPolicies are on. */
  egress?: EgressRule[];
}

export interface ToolPoolStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  /** Number of tools in the spec. */
  toolCount?: number;
  /** NATS subject prefix the runners consume (`interlace.tools.<namespace>.<pool>`). */
  subject?: string;
  /** Runner pod selector as a string (for the scale subresource). */
  selector?: string;
  /** Calls being executed (reported by runners). */
  callsInFlight?: number;
  /** The joint autoscaler's last change (builtin mode). */
  autoscaling?: AutoscalingStatus;
  conditions?: Condition[];
}

export type ToolPool = InterlaceObject<"ToolPool", ToolPoolSpec, ToolPoolStatus>;

/** The same rule as common's TOOL_NAME_PATTERN, written for the API server. */
const TOOL_NAME = "^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$";

const toolSchema: OpenApiSchema = object(
  "A tool the model can call.",
  {
    name: str("Tool name, unique in the pool.", { minLength: 1, maxLength: 64, pattern: TOOL_NAME }),
    description: str("What the tool does, as shown to the model.", { minLength: 1, maxLength: 4096 }),
    parameters: {
      type: "object",
      description: "JSON Schema (an object schema) of the tool's arguments.",
      "x-kubernetes-preserve-unknown-fields": true,
    },
    estimatedLatencyMs: int("Expected run time in milliseconds.", 0, 3_600_000),
    speculative: bool("Stateless and cheap: safe to start before the model commits to the call.", false),
    idempotent: bool("Safe to retry.", false),
    http: object(
      "Call an HTTP endpoint with the arguments as a JSON body.",
      {
        url: httpUrl("Endpoint URL."),
        method: oneOf("HTTP method.", HTTP_METHODS, "POST"),
        timeoutMs: int("Per-call timeout, overriding the pool's.", 1, 3_600_000),
        headers: { type: "object", description: "Extra request headers.", additionalProperties: { type: "string", maxLength: 8192 }, maxProperties: 32 },
      },
      { required: ["url"] },
    ),
    mcp: object(
      "Call a tool on a Model Context Protocol server (streamable HTTP).",
      {
        url: httpUrl("MCP server URL."),
        tool: str("Tool name on the server (default: this tool's name).", { minLength: 1, maxLength: 128 }),
      },
      { required: ["url"] },
    ),
    builtin: object(
      "Run a tool compiled into the runner.",
      { name: str("Builtin tool name (e.g. echo, sleep).", { minLength: 1, maxLength: 64, pattern: TOOL_NAME }) },
      { required: ["name"] },
    ),
  },
  {
    required: ["name", "description", "parameters"],
    "x-kubernetes-validations": [
      {
        rule: "[has(self.http), has(self.mcp), has(self.builtin)].filter(x, x).size() == 1",
        message: "a tool has exactly one implementation: http, mcp or builtin",
      },
    ],
  },
);

const specSchema = object(
  "Desired state of a ToolPool.",
  {
    tools: {
      type: "array",
      description: "The tools, keyed by name.",
      minItems: 1,
      maxItems: 128,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
      items: toolSchema,
    },
    replicas: int("Runner pods.", 0, 100, { default: 1 }),
    concurrency: int("Calls one runner executes at once.", 1, 1024, { default: 8 }),
    timeoutMs: int("Per-call timeout in milliseconds.", 1, 3_600_000, { default: 30_000 }),
    retries: int("Retries of a failed idempotent call.", 0, 10, { default: 2 }),
    image: str("Runner image override.", { minLength: 1, maxLength: 512 }),
    autoscaling: autoscalingSchema("runner pods", 100),
    egress: egressSchema("the runner pods (the http and mcp tools' servers)"),
  },
  { required: ["tools"] },
);

const statusSchema = object("Observed state of a ToolPool.", {
  observedGeneration: observedGenerationSchema(),
  replicas: int("Runner pods the Deployment has.", 0, 1_000_000),
  readyReplicas: int("Runner pods available.", 0, 1_000_000),
  toolCount: int("Tools in the spec.", 0, 1024),
  subject: str("NATS subject prefix the runners consume.", { maxLength: 1024 }),
  selector: str("Runner pod label selector.", { maxLength: 4096 }),
  callsInFlight: int("Calls being executed.", 0, 1_000_000_000),
  autoscaling: autoscalingStatusSchema(),
  conditions: conditionsSchema(),
});

/** The ToolPool kind. */
export const ToolPoolKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: "ToolPool",
  plural: "toolpools",
  singular: "toolpool",
  namespaced: true,
  shortNames: ["tp"],
  description: "ToolPool is a set of tools and the runner pods that execute their calls from NATS JetStream.",
  spec: specSchema,
  status: statusSchema,
  scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" },
  printerColumns: [
    READY_COLUMN,
    { name: "Desired", type: "integer", jsonPath: ".spec.replicas", description: "Desired runner pods." },
    { name: "Available", type: "integer", jsonPath: ".status.readyReplicas", description: "Runner pods available." },
    // A list JSONPath (`.spec.tools[*].name`) would show only the first element: the API server's table printer takes one value.
    { name: "Tools", type: "integer", jsonPath: ".status.toolCount", description: "Tools in the pool." },
    { name: "Subject", type: "string", jsonPath: ".status.subject", priority: 1 },
    REASON_COLUMN,
    AGE_COLUMN,
  ],
};

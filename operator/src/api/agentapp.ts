/**
 * @module AgentApp: an agent served on an EnginePool with tools from
 * ToolPools (prompt, few-shot examples, calling mode, objective, interrupt
 * and speculation settings). Schema (with its CEL rules next to the fields),
 * TypeScript types and kubectl columns. The CRD YAML in `crds/` is generated
 * from this file.
 */
import type { CallingMode, ChatMessage, RetentionHint } from "../../../common/src/index.js";
import { SEMANTIC_FUNCTION_LIMITS } from "../../../common/src/semantic-function.js";
import { sloSchema, type AppSlo } from "./autoscaling.js";
import type { Condition } from "./conditions.js";
import { AGE_COLUMN, GROUP, READY_COLUMN, REASON_COLUMN, VERSION, type InterlaceObject, type KindDefinition } from "./kind.js";
import { bool, conditionsSchema, int, localRef, object, observedGenerationSchema, oneOf, str, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, type OpenApiSchema } from "./schema.js";

export const CALLING_MODES = ["async", "sync", "syncParallel"] as const satisfies readonly CallingMode[];
export const OBJECTIVES = ["latency", "throughput"] as const;
export type Objective = (typeof OBJECTIVES)[number];
export const MESSAGE_ROLES = ["system", "user", "assistant", "tool"] as const satisfies readonly ChatMessage["role"][];

/** A reference to an object in the AgentApp's namespace. */
export interface LocalRef {
  name: string;
}

/** A ToolPool whose tools the app may call; `tools` narrows it to a subset. */
export interface ToolPoolRef {
  name: string;
  /** Only these tools of the pool (absent: all). */
  tools?: string[];
}

/** One few-shot example: a short conversation shown after the system prompt. */
export interface FewShotExample {
  messages: ChatMessage[];
}

export interface InterruptSettings {
  /** Clients may interrupt a running session with new input. Default: true in async mode; true is rejected in sync modes. */
  userInterrupts?: boolean;
  /** Interrupts queued per session before new ones are refused. Default 64. */
  maxQueued?: number;
}

export interface SpeculationSettings {
  /** Start speculative tools before the model commits to the call. Default false. */
  enabled?: boolean;
  /** Calls started ahead per session at most. Default 2. */
  maxInFlight?: number;
  /** Calls the draft model predicts per turn (λ). Default 1. */
  lambda?: number;
  /** Names of the app's ToolPools whose speculative tools may start early (absent: all of them). */
  pools?: string[];
  /** Engine-side speculation too (O2 one-pass validation, O3 append without a trap). Default true. */
  engineSide?: boolean;
}

/** Generation settings of one `{{output:y}}` of a semantic function. */
export interface SemanticOutputSpec {
  name: string;
  /** Default 128 (capped by spec.maxTokens). */
  maxTokens?: number;
  /** Default 0 (greedy). */
  temperature?: number;
}

/**
 * A Parrot-style semantic function: a template with `{{input:x}}` /
 * `{{output:y}}` placeholders, each output declared with its generation
 * settings. Programs (`POST .../programs`) call these functions by name.
 */
export interface SemanticFunctionSpec {
  name: string;
  template: string;
  outputs: SemanticOutputSpec[];
  /** Generate with the app's tools in its calling mode. Default false. */
  tools?: boolean;
}

/** A Secret in the app's namespace holding API keys that may use the app. */
export interface ApiKeySecretRef {
  name: string;
  /** Only this entry of the Secret's data is a key (absent: every entry is one). */
  key?: string;
}

/**
 * Who may call the app, like project keys on hosted APIs: the keys in these
 * Secrets and no other. Absent: the router's own API key file decides.
 */
export interface AppAuthSpec {
  apiKeySecrets: ApiKeySecretRef[];
}

export interface AgentAppSpec {
  enginePool: LocalRef;
  toolPools?: ToolPoolRef[];
  /** The shared prompt prefix. */
  systemPrompt?: string;
  fewShot?: FewShotExample[];
  /** Default `async`. */
  callingMode?: (typeof CALLING_MODES)[number];
  /** Default `latency`. */
  objective?: Objective;
  interrupts?: InterruptSettings;
  speculation?: SpeculationSettings;
  /** KV retention across tool waits, sent with every session of the app unless the request gives its own. */
  kvRetention?: RetentionHint;
  semanticFunctions?: SemanticFunctionSpec[];
  /** Default cap on generated tokens per session. Default 1024. */
  maxTokens?: number;
  /** The latency objective the joint autoscaler scales the app's pools against. */
  slo?: AppSlo;
  /** The API keys that may use the app (absent: the router's key file). */
  auth?: AppAuthSpec;
}

export interface AgentAppStatus {
  observedGeneration?: number;
  /** Where clients open sessions: `http://<router>/v1/apps/<namespace>/<name>`. */
  endpoint?: string;
  /** Name of the ConfigMap holding the rendered app config. */
  configMap?: string;
  /** Tools the app can call (after resolving its ToolPools). */
  toolCount?: number;
  activeSessions?: number;
  conditions?: Condition[];
}

export type AgentApp = InterlaceObject<"AgentApp", AgentAppSpec, AgentAppStatus>;

const messageSchema: OpenApiSchema = object(
  "A chat message.",
  {
    role: oneOf("Who speaks.", MESSAGE_ROLES),
    content: str("Text.", { maxLength: 65_536 }),
  },
  { required: ["role", "content"] },
);

const specSchema = object(
  "Desired state of an AgentApp.",
  {
    enginePool: localRef("The EnginePool that serves the app."),
    toolPools: {
      type: "array",
      description: "ToolPools whose tools the app may call, keyed by name.",
      maxItems: 32,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
      items: object(
        "A ToolPool reference.",
        {
          name: str("ToolPool name (same namespace).", { minLength: 1, maxLength: 63, pattern: DNS_LABEL_PATTERN }),
          tools: {
            type: "array",
            description: "Only these tools of the pool (absent: all).",
            minItems: 1,
            maxItems: 128,
            "x-kubernetes-list-type": "set",
            items: str("Tool name.", { minLength: 1, maxLength: 64 }),
          },
        },
        { required: ["name"] },
      ),
    },
    systemPrompt: str("The system prompt: the prefix every session shares.", { maxLength: 65_536 }),
    fewShot: {
      type: "array",
      description: "Few-shot example conversations, shown after the system prompt.",
      maxItems: 32,
      items: object(
        "One example conversation.",
        { messages: { type: "array", minItems: 1, maxItems: 64, items: messageSchema, description: "The conversation." } },
        { required: ["messages"] },
      ),
    },
    callingMode: oneOf("How tool calls are executed: async (interrupts), sync, or syncParallel.", CALLING_MODES, "async"),
    objective: oneOf("What scheduling optimises for this app's requests.", OBJECTIVES, "latency"),
    interrupts: object("User and agent interrupts.", {
      userInterrupts: { type: "boolean", description: "Clients may interrupt a running session with new input (default: true in async mode; only valid in async mode)." },
      maxQueued: int("Interrupts queued per session before new ones are refused.", 1, 4096, { default: 64 }),
    }),
    speculation: object("Speculative tool calls.", {
      enabled: bool("Start speculative tools before the model commits to the call.", false),
      maxInFlight: int("Calls started ahead per session at most.", 1, 64, { default: 2 }),
      lambda: int("Calls the draft model predicts per turn (lambda).", 1, 16, { default: 1 }),
      pools: {
        type: "array",
        description: "Names of the app's ToolPools whose speculative tools may start early (absent: all of them).",
        maxItems: 32,
        "x-kubernetes-list-type": "set",
        items: str("ToolPool name (one of spec.toolPools).", { minLength: 1, maxLength: 63, pattern: DNS_LABEL_PATTERN }),
      },
      engineSide: bool("Engine-side speculation too: one-pass validation of cached calls and appending cached results without a trap.", true),
    }),
    kvRetention: object("KV retention hint for the app's sessions: how long their tools take and how long a paused session's KV cache is worth keeping (a request's own retention wins).", {
      expectedToolMs: { type: "number", description: "Expected duration of the app's tool calls, ms: the engine's wait estimate for calls whose tool declares no latency.", minimum: 0, maximum: 86_400_000 },
      retentionSeconds: { type: "number", description: "Keep a paused session's KV cache at least this long (the EnginePool's ttl retention policy).", minimum: 0, maximum: 86_400 },
    }),
    semanticFunctions: {
      type: "array",
      description: "Parrot-style semantic functions, keyed by name: what programs (POST /v1/apps/{ns}/{app}/programs) call.",
      maxItems: SEMANTIC_FUNCTION_LIMITS.maxFunctions,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
      items: object(
        "A prompt template with {{input:x}} / {{output:y}} placeholders; each output is declared in outputs with its generation settings.",
        {
          name: str("Function name.", { minLength: 1, maxLength: 64, pattern: "^[a-zA-Z_][a-zA-Z0-9_]*$" }),
          template: str("The template.", { minLength: 1, maxLength: SEMANTIC_FUNCTION_LIMITS.maxTemplateLength }),
          outputs: {
            type: "array",
            description: "The template's outputs, keyed by name, with their generation settings.",
            minItems: 1,
            maxItems: SEMANTIC_FUNCTION_LIMITS.maxOutputs,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            items: object(
              "One output variable.",
              {
                name: str("Output variable name (its {{output:name}} placeholder).", { minLength: 1, maxLength: 64, pattern: "^[a-zA-Z_][a-zA-Z0-9_]*$" }),
                maxTokens: int("Tokens generated for this output at most (capped by spec.maxTokens).", 1, 1_048_576, { default: 128 }),
                temperature: { type: "number", description: "Sampling temperature: 0 (greedy) to 2.", minimum: 0, maximum: 2, default: 0 },
              },
              { required: ["name"] },
            ),
          },
          tools: bool("Generate with the app's tools in its calling mode (calls go through the ToolPools).", false),
        },
        {
          required: ["name", "template", "outputs"],
          // Matching each declared output to its placeholder costs more CEL than a 64 KiB template allows
          // (the API server refuses such rules); the operator checks that and reports the field.
          "x-kubernetes-validations": [
            { rule: "self.template.contains('{{output:')", message: "a semantic function template needs at least one {{output:name}} placeholder", fieldPath: ".template" },
          ],
        },
      ),
    },
    maxTokens: int("Cap on generated tokens per session.", 1, 1_048_576, { default: 1024 }),
    slo: sloSchema(),
    auth: object(
      "Who may call the app: the API keys in these Secrets and no other (absent: the router's own API key file decides). Each key acts as its own id (secret:<namespace>/<Secret>/<data key>), which owns the sessions, programs and responses it creates; a new value under the same data key is a rotation and keeps that id.",
      {
        apiKeySecrets: {
          type: "array",
          description: "Secrets in the app's namespace holding its API keys (each value at least 16 characters; surrounding whitespace is ignored).",
          minItems: 1,
          maxItems: 16,
          "x-kubernetes-list-type": "atomic",
          items: object(
            "A Secret of API keys.",
            {
              name: str("Secret name (same namespace).", { minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN }),
              key: str("Only this entry of the Secret's data is a key (absent: every entry is one).", { minLength: 1, maxLength: 253, pattern: "^[-._a-zA-Z0-9]+$" }),
            },
            { required: ["name"] },
          ),
        },
      },
      {
        required: ["apiKeySecrets"],
        "x-kubernetes-validations": [
          { rule: "self.apiKeySecrets.all(a, self.apiKeySecrets.exists_one(b, b.name == a.name && (has(b.key) ? b.key : '') == (has(a.key) ? a.key : '')))", message: "each Secret (and key) may be named once", fieldPath: ".apiKeySecrets" },
        ],
      },
    ),
  },
  {
    required: ["enginePool"],
    "x-kubernetes-validations": [
      {
        rule: "!has(self.interrupts) || !has(self.interrupts.userInterrupts) || !self.interrupts.userInterrupts || self.callingMode == 'async'",
        message: "user interrupts need callingMode async (set interrupts.userInterrupts to false for sync modes)",
        fieldPath: ".interrupts.userInterrupts",
      },
    ],
  },
);

const statusSchema = object("Observed state of an AgentApp.", {
  observedGeneration: observedGenerationSchema(),
  endpoint: str("Where clients open sessions.", { maxLength: 2048 }),
  configMap: str("ConfigMap with the rendered app config.", { maxLength: 253 }),
  toolCount: int("Tools the app can call.", 0, 100_000),
  activeSessions: int("Sessions running now.", 0, 1_000_000_000),
  conditions: conditionsSchema(),
});

/** The AgentApp kind. */
export const AgentAppKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: "AgentApp",
  plural: "agentapps",
  singular: "agentapp",
  namespaced: true,
  shortNames: ["aa", "app"],
  description: "AgentApp is an agent served on an EnginePool with tools from ToolPools.",
  spec: specSchema,
  status: statusSchema,
  printerColumns: [
    READY_COLUMN,
    { name: "Mode", type: "string", jsonPath: ".spec.callingMode", description: "Calling mode." },
    { name: "Engine", type: "string", jsonPath: ".spec.enginePool.name", description: "EnginePool." },
    { name: "Tools", type: "integer", jsonPath: ".status.toolCount" },
    { name: "Sessions", type: "integer", jsonPath: ".status.activeSessions" },
    { name: "Endpoint", type: "string", jsonPath: ".status.endpoint" },
    REASON_COLUMN,
    AGE_COLUMN,
  ],
};

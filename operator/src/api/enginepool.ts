/**
 * @module EnginePool: a model served by N engine pods. Schema (with its CEL
 * rules next to the fields), TypeScript types and kubectl columns. The CRD
 * YAML in `crds/` is generated from this file.
 */
import { KV_RETENTION_POLICIES, SPECULATION_LIMITS as L, type KvPolicy, type KvRetentionPolicy } from "../../../common/src/index.js";
import { autoscalingSchema, autoscalingStatusSchema, type AutoscalingSpec, type AutoscalingStatus } from "./autoscaling.js";
import type { Condition } from "./conditions.js";
import { egressSchema, type EgressRule } from "./egress.js";
import { AGE_COLUMN, GROUP, READY_COLUMN, REASON_COLUMN, VERSION, type InterlaceObject, type KindDefinition } from "./kind.js";
import {
  conditionsSchema,
  DNS_LABEL_PATTERN,
  httpUrl,
  int,
  object,
  observedGenerationSchema,
  oneOf,
  quantity,
  str,
  type OpenApiSchema,
} from "./schema.js";

/** Where a GGUF file comes from: exactly one of `path`, `pvc`, `hostPath`, `url`. */
export interface FileSource {
  /** An absolute path on a volume already in the pod (e.g. baked into the image or a hostPath). */
  path?: string;
  /** A file on a PersistentVolumeClaim mounted read-only. */
  pvc?: { claimName: string; path: string };
  /** A GGUF file on the node (a single-node or air-gapped cluster with models on its disks), mounted read-only. */
  hostPath?: string;
  /** An http(s) URL an init step downloads before the engine starts. */
  url?: string;
  /** Expected SHA-256 of the file (hex), checked after a download. */
  sha256?: string;
}

/** A LoRA adapter over the model (GGUF, e.g. from `npm run finetune`), applied when the engine creates its context. */
export interface AdapterSource extends FileSource {
  /** Unique among the model's adapters; shown by `kubectl get enginepool`. */
  name: string;
  /** Multiplies the adapter's effect. Default 1. */
  scale?: number;
}

/** The engine's model: a GGUF file and the LoRA adapters applied over it. */
export interface ModelSource extends FileSource {
  adapters?: AdapterSource[];
}

export const BACKENDS = ["llama-cpp", "openai"] as const;
export type Backend = (typeof BACKENDS)[number];
export const DEVICES = ["cpu", "cuda"] as const;
export type Device = (typeof DEVICES)[number];
/** The engine's own `--drain-grace-ms` default, in seconds. */
export const ENGINE_DRAIN_GRACE_DEFAULT_SECONDS = 25;
/** The engine's own `--tool-runner-hold-ms` default, in seconds (the router's cold-start hold). */
export const ENGINE_TOOL_RUNNER_HOLD_DEFAULT_SECONDS = 60;

export const KV_POLICIES = ["keep", "swap", "recompute", "auto"] as const satisfies readonly KvPolicy[];

export interface EngineRuntime {
  /** `llama-cpp` runs the model in the pod; `openai` fronts an upstream OpenAI-compatible server. */
  backend: Backend;
  /** llama-cpp only: CPU or CUDA build. Default `cpu`. */
  device?: Device;
  /** openai only: the upstream base URL (required for `openai`). */
  upstreamURL?: string;
  /** openai only: model name sent upstream. */
  upstreamModel?: string;
  /** Context size in tokens. Default 4096. */
  contextSize?: number;
  /** Sequences decoded together in one batch. Default 4. */
  parallelSequences?: number;
  /** CPU threads for llama.cpp (absent: the runtime decides). */
  threads?: number;
  /** llama-cpp only: sequences beyond `parallelSequences` that keep apps' shared prefixes after their sessions end. Default 0. */
  prefixStore?: number;
}

export interface EngineResources {
  /** `nvidia.com/gpu` per pod. */
  gpus?: number;
  memory?: string | number;
  cpu?: string | number;
}

export interface DraftModel {
  /** The small model that predicts the next tool call. */
  model: ModelSource;
  /** Tokens drafted ahead. Default 16, the engine's. */
  maxDraftTokens?: number;
  /** The draft's own llama.cpp threads, beside the main model's. Default 1. */
  threads?: number;
}

/** Bounds of the engine's tool cache (speculated and client-supplied tool outputs). Engine defaults where left out. */
export interface ToolCacheSpec {
  ttlSeconds?: number;
  entriesPerSession?: number;
  maxBytes?: number;
  maxOutputBytes?: number;
}

/** Exposure as a Gateway API Inference Extension InferencePool, with Interlace's endpoint picker. */
export interface InferencePoolExposure {
  /** Endpoint picker pods. Default 1. */
  pickerReplicas?: number;
  /** What the gateway does when the picker does not answer. Default FailClose. */
  failureMode?: "FailOpen" | "FailClose";
}

export interface EnginePoolSpec {
  /** The model; required unless `runtime.backend` is `openai`. */
  model?: ModelSource;
  /** Engine pods. Default 1. */
  replicas?: number;
  /** Engine image override (default: the operator's configured image). */
  image?: string;
  resources?: EngineResources;
  runtime: EngineRuntime;
  /** What the trap handler does with a paused sequence's KV cache. Default `auto`. */
  kvPolicy?: KvPolicy;
  /** Which paused session gives its KV cache up when a request finds every sequence held. */
  kvRetention?: { policy?: KvRetentionPolicy; ttlSeconds?: number };
  draftModel?: DraftModel;
  /** Bounds of the engine's tool cache. */
  toolCache?: ToolCacheSpec;
  /** Node labels the engine pods must match (e.g. a GPU node pool). */
  nodeSelector?: Record<string, string>;
  /** Also expose the pool as an InferencePool for a gateway, picked by Interlace's endpoint picker. */
  inferencePool?: InferencePoolExposure;
  /** Joint autoscaling against the SLOs of the apps on the pool (absent: `replicas` stays as written). */
  autoscaling?: AutoscalingSpec;
  /** Where the engines may connect besides NATS and DNS (an `openai` backend's upstream), when per-pool NetworkPolicies are on. */
  egress?: EgressRule[];
  /**
   * How long an engine pod being removed (scale-down, rollout, node drain)
   * lets its live sessions run on before cutting them with a reason, seconds.
   * Rendered as the engine's `--drain-grace-ms` and, with a margin for the
   * engine's own shutdown, the pod's `terminationGracePeriodSeconds`. Default 25.
   */
  drainGraceSeconds?: number;
  /**
   * How long a tool call to a pool with no live runner (a ToolPool at zero
   * being woken by the autoscaler) waits for one, seconds, before the model
   * gets a `no_runners` error. Rendered as the engine's `--tool-runner-hold-ms`.
   * 0: fail at once. Default 60.
   */
  toolRunnerHoldSeconds?: number;
}

export interface EnginePoolStatus {
  observedGeneration?: number;
  /** Pods the Deployment has. */
  replicas?: number;
  /** Pods available to serve. */
  readyReplicas?: number;
  /** `http://<service>.<namespace>.svc:<port>` of the headless Service. */
  endpoint?: string;
  /** Pod selector as a string (for the scale subresource). */
  selector?: string;
  /** The InferencePool a gateway's HTTPRoute names (with `spec.inferencePool`). */
  inferencePool?: string;
  /** The joint autoscaler's last change (builtin mode). */
  autoscaling?: AutoscalingStatus;
  conditions?: Condition[];
}

export type EnginePool = InterlaceObject<"EnginePool", EnginePoolSpec, EnginePoolStatus>;

const EXACTLY_ONE_SOURCE = "[has(self.path), has(self.pvc), has(self.hostPath), has(self.url)].filter(x, x).size() == 1";

/**
 * The file-source fields, shared by models and adapters. An adapter's file
 * ends up in the engine's `--adapters PATH@SCALE,...` list, so its paths may
 * not hold `,` or `@` (one with a comma read back as two adapters; found by
 * the CRD fuzzer).
 */
function fileSourceProperties(what: string, listed = false): Record<string, OpenApiSchema> {
  const chars = listed ? "[^,@]" : ".";
  const absolute = listed ? "^/[^,@]*$" : "^/";
  const listedNote = listed ? " No `,` or `@` (the engine's adapter list separators)." : "";
  return {
    path: str(`Absolute path of the ${what} on a volume present in the pod.${listedNote}`, { minLength: 2, maxLength: 4096, pattern: absolute }),
    pvc: object(
      `The ${what} on a PersistentVolumeClaim, mounted read-only.`,
      {
        claimName: str("The PersistentVolumeClaim (same namespace).", { minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" }),
        path: str(`Path of the file inside the volume.${listedNote}`, { minLength: 1, maxLength: 4096, pattern: listed ? "^[^/,@][^,@]*$" : `^[^/]${chars}*$` }),
      },
      { required: ["claimName", "path"] },
    ),
    hostPath: str(`Absolute path of the ${what} on the node, mounted read-only (every node the pool may run on needs it).${listedNote}`, { minLength: 2, maxLength: 4096, pattern: absolute }),
    url: httpUrl("http(s) URL downloaded by an init step before the engine starts."),
    sha256: str("Expected SHA-256 (hex) of the file.", { pattern: "^[a-f0-9]{64}$" }),
  };
}

const adaptersSchema: OpenApiSchema = {
  type: "array",
  description:
    "LoRA adapters (GGUF) applied over the model when the engine creates its context, e.g. a CML fine-tune from `npm run finetune`. An init step checks each against the model before the engine starts; a missing or incompatible adapter is reported in status (AdapterNotFound, AdapterInvalid, AdapterIncompatible).",
  maxItems: 8,
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["name"],
  items: object(
    "A LoRA adapter: a name and exactly one of path, pvc, hostPath or url.",
    {
      name: str("Unique among the model's adapters.", { minLength: 1, maxLength: 63, pattern: DNS_LABEL_PATTERN }),
      scale: { type: "number", description: "Multiplies the adapter's effect (default 1).", minimum: 0, exclusiveMinimum: true, maximum: 4 },
      ...fileSourceProperties("adapter GGUF file", true),
    },
    {
      required: ["name"],
      "x-kubernetes-validations": [{ rule: EXACTLY_ONE_SOURCE, message: "an adapter source is exactly one of path, pvc, hostPath or url" }],
    },
  ),
};

/** The model-source node, shared by `model` and `draftModel.model`. */
function modelSourceSchema(description: string): OpenApiSchema {
  return object(
    description,
    { ...fileSourceProperties("GGUF file"), adapters: adaptersSchema },
    {
      "x-kubernetes-validations": [
        {
          rule: EXACTLY_ONE_SOURCE,
          message: "a model source is exactly one of path, pvc, hostPath or url",
        },
      ],
    },
  );
}

const runtimeSchema = object(
  "How the engine runs the model.",
  {
    backend: oneOf("llama-cpp runs the model in the pod; openai fronts an upstream OpenAI-compatible server.", BACKENDS, "llama-cpp"),
    device: oneOf("llama-cpp only: CPU or CUDA.", DEVICES),
    upstreamURL: httpUrl("openai only: base URL of the upstream OpenAI-compatible server."),
    upstreamModel: str("openai only: model name sent upstream.", { minLength: 1, maxLength: 256 }),
    contextSize: int("Context size in tokens.", 256, 1_048_576, { default: 4096 }),
    parallelSequences: int("Sequences decoded together in one batch.", 1, 256, { default: 4 }),
    threads: int("CPU threads for llama.cpp.", 1, 512),
    prefixStore: int(
      "llama-cpp only: extra sequences that keep apps' shared prefixes (system prompt, tool block) after their sessions end, so a saturated engine does not evict them; each costs contextSize KV cells.",
      0,
      64,
    ),
  },
  {
    required: ["backend"],
    "x-kubernetes-validations": [
      { rule: "self.backend != 'openai' || has(self.upstreamURL)", message: "an openai backend needs an upstreamURL", fieldPath: ".upstreamURL", reason: "FieldValueRequired" },
      { rule: "self.backend == 'openai' || !has(self.upstreamURL)", message: "upstreamURL is only valid with the openai backend", fieldPath: ".upstreamURL", reason: "FieldValueForbidden" },
      { rule: "self.backend == 'llama-cpp' || !has(self.device)", message: "device is only valid with the llama-cpp backend", fieldPath: ".device", reason: "FieldValueForbidden" },
      { rule: "self.backend == 'llama-cpp' || !has(self.prefixStore)", message: "prefixStore is only valid with the llama-cpp backend", fieldPath: ".prefixStore", reason: "FieldValueForbidden" },
    ],
  },
);

const specSchema = object(
  "Desired state of an EnginePool.",
  {
    model: modelSourceSchema("The model the engine serves: exactly one of path, pvc, hostPath or url."),
    replicas: int("Engine pods.", 0, 64, { default: 1 }),
    image: str("Engine image override.", { minLength: 1, maxLength: 512 }),
    resources: object("Per-pod resources.", {
      gpus: int("nvidia.com/gpu per pod.", 0, 16),
      memory: quantity("Memory request and limit per pod, e.g. 16Gi."),
      cpu: quantity("CPU request per pod, e.g. 4 or 500m."),
    }),
    runtime: runtimeSchema,
    kvPolicy: oneOf("What the trap handler does with a paused sequence's KV cache.", KV_POLICIES, "auto"),
    kvRetention: object("KV retention under memory pressure: which paused session gives its KV cache up when a request finds every sequence held.", {
      policy: oneOf("eta: the one expected to wait longest (restore hidden in its wait); ttl: pinned for ttlSeconds, then the longest-paused; lru: the least recently active; pin: none (the request is refused); discard: none kept across a tool wait.", KV_RETENTION_POLICIES, "eta"),
      ttlSeconds: int("The ttl policy's TTL when a session gives no retentionSeconds.", 0, 86_400, { default: 30 }),
    }),
    draftModel: object(
      "Optional draft model for speculative tool calls.",
      {
        model: modelSourceSchema("The draft model: exactly one of path, pvc, hostPath or url."),
        maxDraftTokens: int("Tokens drafted ahead, validated in one pass.", L.maxDraftTokens.min, L.maxDraftTokens.max, { default: L.maxDraftTokens.default }),
        threads: int("The draft model's own llama.cpp threads, beside runtime.threads.", L.draftThreads.min, L.draftThreads.max, { default: L.draftThreads.default }),
      },
      { required: ["model"] },
    ),
    toolCache: object(
      "Bounds of the engine's tool cache (outputs of speculated calls and those a client sends with cache-tool-output).",
      {
        ttlSeconds: int("How long a cached output stays valid.", L.toolCacheTtlSeconds.min, L.toolCacheTtlSeconds.max, { default: L.toolCacheTtlSeconds.default }),
        entriesPerSession: int("Cached outputs per session.", L.toolCacheEntries.min, L.toolCacheEntries.max, { default: L.toolCacheEntries.default }),
        maxBytes: int("Bytes of cached outputs, all sessions together.", L.toolCacheMaxBytes.min, L.toolCacheMaxBytes.max, { default: L.toolCacheMaxBytes.default }),
        maxOutputBytes: int("Largest single output cached (a larger one is refused with 413).", L.maxCachedOutputBytes.min, L.maxCachedOutputBytes.max, { default: L.maxCachedOutputBytes.default }),
      },
      { "x-kubernetes-validations": [{ rule: "self.maxOutputBytes <= self.maxBytes", message: "maxOutputBytes must not exceed maxBytes", fieldPath: ".maxOutputBytes" }] },
    ),
    nodeSelector: { type: "object", description: "Node labels the engine pods must match.", additionalProperties: { type: "string" }, maxProperties: 32 },
    inferencePool: object(
      "Expose the pool as an InferencePool (inference.networking.k8s.io/v1, same name) whose endpoint picker is Interlace's: a gateway that supports the Gateway API Inference Extension then places requests as the router does.",
      {
        pickerReplicas: int("Endpoint picker pods.", 1, 16, { default: 1 }),
        failureMode: oneOf("What the gateway does when the picker does not answer.", ["FailOpen", "FailClose"] as const, "FailClose"),
      },
    ),
    autoscaling: autoscalingSchema("engine pods", 64),
    egress: egressSchema("the engine pods (an openai backend's upstream)"),
    drainGraceSeconds: int(
      "Seconds an engine pod being removed (scale-down, rollout, node drain) lets its live sessions run on before it cuts them with the reason 'engine draining: grace period expired'. The pod's terminationGracePeriodSeconds is this plus 15 s for the engine's own shutdown.",
      0,
      3600,
      { default: ENGINE_DRAIN_GRACE_DEFAULT_SECONDS },
    ),
    toolRunnerHoldSeconds: int(
      "Seconds a tool call to a pool with no live runner (a ToolPool at zero that the autoscaler wakes on the call's backlog) waits for a runner before the model gets a no_runners error naming the hold. 0 fails such a call at once.",
      0,
      600,
      { default: ENGINE_TOOL_RUNNER_HOLD_DEFAULT_SECONDS },
    ),
  },
  {
    required: ["runtime"],
    "x-kubernetes-validations": [
      { rule: "self.runtime.backend == 'openai' || has(self.model)", message: "a llama-cpp engine needs a model", fieldPath: ".model", reason: "FieldValueRequired" },
      {
        rule: "!has(self.resources) || !has(self.resources.gpus) || self.resources.gpus == 0 || (self.runtime.backend == 'llama-cpp' && has(self.runtime.device) && self.runtime.device == 'cuda')",
        message: "GPUs need the llama-cpp backend with device cuda",
        fieldPath: ".resources.gpus",
      },
      { rule: "self.runtime.backend == 'llama-cpp' || !has(self.draftModel)", message: "a draft model needs the llama-cpp backend", fieldPath: ".draftModel", reason: "FieldValueForbidden" },
    ],
  },
);

const statusSchema = object("Observed state of an EnginePool.", {
  observedGeneration: observedGenerationSchema(),
  replicas: int("Pods the Deployment has.", 0, 1_000_000),
  readyReplicas: int("Pods available to serve.", 0, 1_000_000),
  endpoint: str("URL of the engine pool's headless Service.", { maxLength: 2048 }),
  selector: str("Pod label selector.", { maxLength: 4096 }),
  inferencePool: str("The InferencePool exposing the pool, when spec.inferencePool is set.", { maxLength: 253 }),
  autoscaling: autoscalingStatusSchema(),
  conditions: conditionsSchema(),
});

/** The EnginePool kind. */
export const EnginePoolKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: "EnginePool",
  plural: "enginepools",
  singular: "enginepool",
  namespaced: true,
  shortNames: ["engp"],
  description: "EnginePool is a model served by a set of Interlace engine pods (llama.cpp on CPU/CUDA, or an OpenAI-compatible upstream).",
  spec: specSchema,
  status: statusSchema,
  scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" },
  objectRules: [
    {
      // The headless Service is `<name>-engine`, and a Service name is a DNS-1035 label (<= 63, starts with a letter).
      rule: "self.metadata.name.size() <= 56 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
      message: "an EnginePool name must start with a letter and be at most 56 characters (its Services are <name>-engine and <name>-picker)",
    },
  ],
  printerColumns: [
    READY_COLUMN,
    { name: "Desired", type: "integer", jsonPath: ".spec.replicas", description: "Desired engine pods." },
    { name: "Available", type: "integer", jsonPath: ".status.readyReplicas", description: "Engine pods available." },
    { name: "Backend", type: "string", jsonPath: ".spec.runtime.backend" },
    { name: "Adapters", type: "string", jsonPath: ".spec.model.adapters[*].name", description: "LoRA adapters over the model." },
    { name: "KV", type: "string", jsonPath: ".spec.kvPolicy", description: "KV policy on traps.", priority: 1 },
    { name: "Endpoint", type: "string", jsonPath: ".status.endpoint" },
    REASON_COLUMN,
    AGE_COLUMN,
  ],
};

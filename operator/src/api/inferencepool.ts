/**
 * @module InferencePool (`inference.networking.k8s.io/v1`), the Gateway API
 * Inference Extension's kind, which the operator writes for an EnginePool
 * exposed to a gateway: its types, its REST coordinates, and its CRD, written
 * here from the published v1 API (GAIE `api/v1/inferencepool_types.go` and
 * `shared_types.go`: fields, defaults, enums, bounds and CEL rules) for
 * clusters that have none. The chart ships that CRD in its `crds/` folder,
 * which Helm installs only when absent, so a cluster that already runs GAIE
 * keeps its own.
 */
import type { V1ObjectMeta } from "@kubernetes/client-node";
import { int, object, oneOf, str, type OpenApiSchema } from "./schema.js";

export const INFERENCE_GROUP = "inference.networking.k8s.io";
export const INFERENCE_VERSION = "v1";

/** Where the runtime reads and writes InferencePools (structurally a runtime `ResourceType`, as a KindDefinition is). */
export const InferencePoolType = { group: INFERENCE_GROUP, version: INFERENCE_VERSION, kind: "InferencePool", plural: "inferencepools", namespaced: true } as const;

export interface InferencePoolPort {
  number: number;
}

export interface EndpointPickerRef {
  /** Default "" (core). */
  group?: string;
  /** Default "Service". */
  kind?: string;
  name: string;
  /** Required for a Service: the Service port (not the target port). */
  port?: InferencePoolPort;
  /** What the gateway does when the picker does not answer. Default FailClose. */
  failureMode?: "FailOpen" | "FailClose";
}

export interface InferencePoolSpec {
  /** Selects the model-server pods, in the pool's namespace. */
  selector: { matchLabels: Record<string, string> };
  /** Each pod is an endpoint `podIP:number` per port (1..8, unique). */
  targetPorts: InferencePoolPort[];
  /** `http` (default) or `kubernetes.io/h2c`. */
  appProtocol?: "http" | "kubernetes.io/h2c";
  endpointPickerRef?: EndpointPickerRef;
}

export interface InferencePool {
  apiVersion: `${typeof INFERENCE_GROUP}/${typeof INFERENCE_VERSION}`;
  kind: "InferencePool";
  metadata: V1ObjectMeta;
  spec: InferencePoolSpec;
  /** Written by gateways: one entry per parent (Gateway) with Accepted / ResolvedRefs conditions. */
  status?: { parents?: unknown[] };
}

const GROUP_NAME = { maxLength: 253, pattern: "^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" };
const KIND_NAME = { minLength: 1, maxLength: 63, pattern: "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$" };
const OBJECT_NAME = { minLength: 1, maxLength: 253 };
const NAMESPACE_NAME = { minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" };
const LABEL_VALUE = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

function port(description: string): OpenApiSchema {
  return object(description, { number: int("The port number (1-65535).", 1, 65535, { format: "int32" }) }, { required: ["number"] });
}

/** metav1.Condition, as the gateways write it under each parent. */
const CONDITION: OpenApiSchema = object(
  "A status condition (metav1.Condition).",
  {
    type: str("Condition type, e.g. Accepted or ResolvedRefs.", { maxLength: 316, pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$" }),
    status: oneOf("True, False or Unknown.", ["True", "False", "Unknown"] as const),
    observedGeneration: int("The generation the condition was set for.", 0, Number.MAX_SAFE_INTEGER, { format: "int64" }),
    lastTransitionTime: { type: "string", format: "date-time", description: "When the status last changed." },
    reason: str("CamelCase reason.", { minLength: 1, maxLength: 1024, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" }),
    message: str("Human-readable details.", { maxLength: 32768 }),
  },
  { required: ["type", "status", "lastTransitionTime", "reason", "message"] },
);

const specSchema = object(
  "The desired state of the InferencePool.",
  {
    selector: object(
      "Which Pods are members of this pool (labels only, within its namespace; as simple as a Service selector).",
      {
        matchLabels: {
          type: "object",
          description: "Labels a member Pod carries.",
          minProperties: 1,
          maxProperties: 64,
          additionalProperties: { type: "string", maxLength: 63, pattern: LABEL_VALUE },
        },
      },
      { required: ["matchLabels"] },
    ),
    targetPorts: {
      type: "array",
      description: "The ports the pool exposes; each pod and port is an endpoint `podIP:number` for the endpoint picker.",
      minItems: 1,
      maxItems: 8,
      items: port("A target port."),
      "x-kubernetes-list-type": "atomic",
      "x-kubernetes-validations": [{ rule: "self.all(p1, self.exists_one(p2, p1.number==p2.number))", message: "port number must be unique" }],
    },
    appProtocol: oneOf("The application protocol of every target port: http (HTTP/1.1) or kubernetes.io/h2c (HTTP/2 over cleartext).", ["http", "kubernetes.io/h2c"] as const, "http"),
    endpointPickerRef: object(
      "The endpoint picker extension the gateway asks, request by request, which endpoint serves.",
      {
        group: str('API group of the referent ("" is the core group).', { ...GROUP_NAME, default: "" }),
        kind: str("Kind of the referent (default Service; ExternalName Services are not supported).", { ...KIND_NAME, default: "Service" }),
        name: str("Name of the referent.", OBJECT_NAME),
        port: port("The picker's port: for a Service, the Service port."),
        failureMode: oneOf("What the gateway does when the picker does not answer: drop the request (FailClose) or pick an endpoint itself (FailOpen).", ["FailOpen", "FailClose"] as const, "FailClose"),
      },
      {
        required: ["name"],
        "x-kubernetes-validations": [{ rule: "self.kind != 'Service' || has(self.port)", message: "port is required when kind is 'Service' or unspecified (defaults to 'Service')" }],
      },
    ),
  },
  { required: ["selector", "targetPorts"] },
);

const statusSchema = object("The observed state of the InferencePool, per parent (Gateway).", {
  parents: {
    type: "array",
    description: "Parents (typically Gateways) associated with the pool and the pool's status for each.",
    maxItems: 32,
    "x-kubernetes-list-type": "atomic",
    items: object(
      "The pool's status as one parent sees it.",
      {
        conditions: {
          type: "array",
          description: "Accepted and ResolvedRefs conditions.",
          maxItems: 8,
          items: CONDITION,
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["type"],
        },
        parentRef: object(
          "The parent this status is for.",
          {
            group: str("API group of the parent (default gateway.networking.k8s.io).", { ...GROUP_NAME, default: "gateway.networking.k8s.io" }),
            kind: str("Kind of the parent (default Gateway).", { ...KIND_NAME, default: "Gateway" }),
            name: str("Name of the parent.", OBJECT_NAME),
            namespace: str("Namespace of the parent (default: the pool's).", NAMESPACE_NAME),
          },
          { required: ["name"] },
        ),
        controllerName: str("The controller that wrote this entry (DOMAIN/PATH).", {
          minLength: 1,
          maxLength: 253,
          pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9\\/\\-._~%!$&'()*+,;=:]+$",
        }),
      },
      { required: ["parentRef"] },
    ),
  },
});

/** The InferencePool CRD (apiextensions.k8s.io/v1), JSON-shaped. */
export function inferencePoolCrd(): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `inferencepools.${INFERENCE_GROUP}`,
      annotations: { "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/1173" },
      labels: { "app.kubernetes.io/part-of": "interlace" },
    },
    spec: {
      group: INFERENCE_GROUP,
      scope: "Namespaced",
      names: { kind: "InferencePool", listKind: "InferencePoolList", plural: "inferencepools", singular: "inferencepool", shortNames: ["infpool"] },
      versions: [
        {
          name: INFERENCE_VERSION,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: "InferencePool is a set of model-server Pods and the endpoint picker that chooses among them (Gateway API Inference Extension).",
              properties: {
                apiVersion: { type: "string", description: "APIVersion of this object." },
                kind: { type: "string", description: "Kind of this object." },
                metadata: { type: "object" },
                spec: specSchema,
                status: statusSchema,
              },
              required: ["spec"],
            },
          },
          subresources: { status: {} },
        },
      ],
    },
  };
}

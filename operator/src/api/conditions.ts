/**
 * @module Condition types and reasons every Interlace kind reports in
 * `status.conditions` (metav1.Condition shape). One file so reconcilers,
 * tests and printer columns agree on the spelling.
 */
import { ModelCheckReason } from "../../../common/src/index.js";

/** The three condition types each kind carries. */
export const ConditionType = {
  /** Children exist and are available; the resource can serve. */
  Ready: "Ready",
  /** A change is being rolled out (children created, replicas coming up). */
  Progressing: "Progressing",
  /** Something is wrong that needs attention (bad reference, failed apply). */
  Degraded: "Degraded",
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** `True`, `False` or `Unknown`. */
export type ConditionStatus = "True" | "False" | "Unknown";

/** Reasons (CamelCase, as metav1.Condition requires). */
export const Reason = {
  // Degraded: an engine pod's model check failed (ModelNotFound, ModelInvalid, AdapterNotFound, AdapterInvalid, AdapterIncompatible).
  ...ModelCheckReason,
  // Ready
  /** All desired replicas are available. */
  Available: "Available",
  /** Some desired replicas are not available yet. */
  ReplicasUnavailable: "ReplicasUnavailable",
  /** Scaled to zero replicas on purpose. */
  ScaledToZero: "ScaledToZero",
  /** An AgentApp's referenced pools are not all Ready. */
  DependenciesNotReady: "DependenciesNotReady",
  /** No router replica serves the AgentApp's current config yet. */
  RouterNotServing: "RouterNotServing",
  /** The AgentApp's EnginePool has no engine whose heartbeat says ready. */
  NoReadyEngine: "NoReadyEngine",
  // Progressing
  /** Children were created or changed and a rollout is under way. */
  RolloutInProgress: "RolloutInProgress",
  /** The latest spec is fully rolled out. */
  RolloutComplete: "RolloutComplete",
  // Degraded
  /** Nothing wrong. */
  AsExpected: "AsExpected",
  /** The AgentApp's EnginePool does not exist. */
  EnginePoolNotFound: "EnginePoolNotFound",
  /** One of the AgentApp's ToolPools does not exist. */
  ToolPoolNotFound: "ToolPoolNotFound",
  /** An AgentApp selects a tool its ToolPool does not define. */
  ToolNotFound: "ToolNotFound",
  /** A Secret an AgentApp's spec.auth names does not exist (the routers stop serving the app: no key may use it). */
  ApiKeySecretNotFound: "ApiKeySecretNotFound",
  /** A Secret an AgentApp's spec.auth names lacks the key it names, or holds no key at all. */
  ApiKeyNotFound: "ApiKeyNotFound",
  /** An API key in such a Secret is too short to be a key (under 16 characters). */
  ApiKeyInvalid: "ApiKeyInvalid",
  /** The spec passed the schema but cannot be realised (e.g. a tool name clash across pools). */
  InvalidSpec: "InvalidSpec",
  /** The calling mode needs what the EnginePool's backend lacks (async on an openai-backend pool). */
  ModeUnsupportedByBackend: "ModeUnsupportedByBackend",
  /** An EnginePool asks to be exposed as an InferencePool, but the cluster has no InferencePool CRD. */
  InferencePoolCrdMissing: "InferencePoolCrdMissing",
  /** Applying a child failed (will be retried). */
  ApplyFailed: "ApplyFailed",
  /** Cleanup outside the cluster failed during deletion (will be retried). */
  CleanupFailed: "CleanupFailed",
  /** Being deleted. */
  Deleting: "Deleting",
  // Events of the joint autoscaler (the message is the decision's reason)
  /** The autoscaler added replicas. */
  ScaledUp: "ScaledUp",
  /** The autoscaler removed replicas. */
  ScaledDown: "ScaledDown",
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** One condition as stored in `status.conditions` (metav1.Condition). */
export interface Condition {
  type: ConditionType | (string & {});
  status: ConditionStatus;
  observedGeneration?: number;
  /** RFC 3339 time. */
  lastTransitionTime: string;
  reason: Reason | (string & {});
  message: string;
}

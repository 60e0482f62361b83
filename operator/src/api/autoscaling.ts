/**
 * @module The autoscaling vocabulary the kinds share: a pool's
 * `spec.autoscaling` (mode and bounds, on EnginePool and ToolPool), its
 * `status.autoscaling` (the last decision), and an AgentApp's `spec.slo`.
 * Schema builders with their CEL rules next to the fields; the CRD YAML is
 * generated from them through the kinds that use them.
 */
import { int, object, oneOf, str, type OpenApiSchema } from "./schema.js";

/** `builtin`: the operator's joint autoscaler writes replicas; `external`: HPA, KEDA or a person does. */
export const AUTOSCALING_MODES = ["builtin", "external"] as const;
export type AutoscalingMode = (typeof AUTOSCALING_MODES)[number];

/** Defaults the schema fills in (and the decision function assumes when a field is absent). */
export const AUTOSCALING_DEFAULTS = {
  mode: "builtin",
  minReplicas: 1,
  scaleDownStabilizationSeconds: 300,
  idleSecondsBeforeZero: 600,
} as const satisfies Partial<AutoscalingSpec>;

/** A pool's autoscaling bounds. */
export interface AutoscalingSpec {
  /** Default `builtin`. */
  mode?: AutoscalingMode;
  /** Default 1; 0 lets the pool go to zero after `idleSecondsBeforeZero` without work. */
  minReplicas?: number;
  maxReplicas: number;
  /** A scale-down follows the highest replica count wanted over this window. Default 300. */
  scaleDownStabilizationSeconds?: number;
  /** With `minReplicas: 0`: seconds without any work before the pool goes to zero. Default 600. */
  idleSecondsBeforeZero?: number;
}

/** Which way a decision moved a pool. */
export const SCALE_DIRECTIONS = ["up", "down"] as const;
export type ScaleDirection = (typeof SCALE_DIRECTIONS)[number];

/** The autoscaler's last change to a pool, as `status.autoscaling` shows it. */
export interface AutoscalingStatus {
  /** Replicas the last decision asked for. */
  desiredReplicas: number;
  /** RFC 3339 time of the last change. */
  lastScaleTime: string;
  lastDirection: ScaleDirection;
  /** Why, e.g. "scaled ToolPool weather 2→4: 37 calls pending, p90 tool wait 2.1 s". */
  lastReason: string;
}

/** An AgentApp's service-level objective, in milliseconds. */
export interface AppSlo {
  /** 90th percentile of a task's (session's) end-to-end latency, generation and tools together. */
  taskLatencyP90Ms?: number;
  /** 90th percentile of the time to the first generated token. */
  ttftP90Ms?: number;
}

/** `spec.autoscaling` of a pool whose replicas are capped at `maxAllowed` by its own `spec.replicas` schema. */
export function autoscalingSchema(what: string, maxAllowed: number): OpenApiSchema {
  return object(
    `Autoscaling of the ${what}: builtin lets the operator's joint autoscaler set spec.replicas from live signals against the SLOs of the AgentApps that use the pool; external leaves spec.replicas (the scale subresource) to HPA, KEDA or a person.`,
    {
      mode: oneOf("builtin: the operator scales; external: another autoscaler does (the operator only exports its signals).", AUTOSCALING_MODES, AUTOSCALING_DEFAULTS.mode),
      minReplicas: int(`Fewest ${what}; 0 allows scaling to zero after idleSecondsBeforeZero without work.`, 0, maxAllowed, { default: AUTOSCALING_DEFAULTS.minReplicas }),
      maxReplicas: int(`Most ${what}.`, 1, maxAllowed),
      scaleDownStabilizationSeconds: int(
        "A scale-down follows the highest replica count wanted over this many seconds, so a lull shorter than the window changes nothing.",
        0,
        3600,
        { default: AUTOSCALING_DEFAULTS.scaleDownStabilizationSeconds },
      ),
      idleSecondsBeforeZero: int("With minReplicas 0: seconds without any work (nothing pending, running or queued) before the pool goes to zero.", 0, 86_400, {
        default: AUTOSCALING_DEFAULTS.idleSecondsBeforeZero,
      }),
    },
    {
      required: ["maxReplicas"],
      "x-kubernetes-validations": [{ rule: "!has(self.minReplicas) || self.minReplicas <= self.maxReplicas", message: "minReplicas must not exceed maxReplicas", fieldPath: ".minReplicas" }],
    },
  );
}

/** `status.autoscaling`. */
export function autoscalingStatusSchema(): OpenApiSchema {
  return object(
    "The joint autoscaler's last change to this pool.",
    {
      desiredReplicas: int("Replicas the last decision asked for.", 0, 1_000_000),
      lastScaleTime: str("When the last change was made.", { format: "date-time" }),
      lastDirection: oneOf("up or down.", SCALE_DIRECTIONS),
      lastReason: str("Why, with the signals that decided it.", { maxLength: 1024 }),
    },
    { required: ["desiredReplicas", "lastScaleTime", "lastDirection", "lastReason"] },
  );
}

/** The most a latency objective may be: one day, in milliseconds. */
const MAX_SLO_MS = 86_400_000;

/** `spec.slo` of an AgentApp. */
export function sloSchema(): OpenApiSchema {
  return object(
    "The app's service-level objective, in milliseconds: the joint autoscaler of the app's EnginePool and ToolPools (those with autoscaling.mode builtin) scales the side that threatens it.",
    {
      taskLatencyP90Ms: int("90th percentile of a task's (session's) end-to-end latency, generation and tool calls together, in milliseconds.", 1, MAX_SLO_MS),
      ttftP90Ms: int("90th percentile of the time to the first generated token, in milliseconds.", 1, MAX_SLO_MS),
    },
    {
      minProperties: 1,
      "x-kubernetes-validations": [
        {
          rule: "!has(self.ttftP90Ms) || !has(self.taskLatencyP90Ms) || self.ttftP90Ms <= self.taskLatencyP90Ms",
          message: "ttftP90Ms must not exceed taskLatencyP90Ms (the first token is part of the task)",
          fieldPath: ".ttftP90Ms",
        },
      ],
    },
  );
}

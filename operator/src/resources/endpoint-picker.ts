/**
 * @module An EnginePool exposed to a gateway (`spec.inferencePool`): the
 * InferencePool (same name; its selector is the engine pods', its target
 * port theirs, its `endpointPickerRef` the picker's Service), and the
 * endpoint picker that pool names: a Deployment running the router image's
 * picker entrypoint for this one pool, and a Service with its gRPC port
 * (`kubernetes.io/h2c`, GAIE's 9002) and its HTTP port (probes, /metrics).
 * Pure functions of the EnginePool and the operator's build options.
 */
import type { V1Deployment, V1Service } from "@kubernetes/client-node";
import { INFERENCE_GROUP, INFERENCE_VERSION, type EnginePool, type InferencePool } from "../api/index.js";
import { CONTAINER_SECURITY, HOME_ENV, POD_PORT, POD_SECURITY, childMeta, httpProbes, selectorLabels, type BuildOptions } from "./common.js";
import { credentialsWiring, type PodCredentials } from "./credentials.js";
import { ENGINE_COMPONENT } from "./engine-pool.js";

export const PICKER_COMPONENT = "endpoint-picker";
/** The picker's entrypoint in the Interlace image. */
export const PICKER_COMMAND = ["node", "dist/router/src/picker/main.js"];
/** The ext_proc gRPC port (GAIE's default). */
export const PICKER_GRPC_PORT = 9002;

/** `<pool>-picker`: the picker's Deployment, Service and credentials. */
export function pickerChildName(pool: EnginePool): string {
  return `${pool.metadata.name ?? ""}-picker`;
}

/** The InferencePool is named as the EnginePool: the name a gateway's HTTPRoute uses. */
export function inferencePoolName(pool: EnginePool): string {
  return pool.metadata.name ?? "";
}

export function buildInferencePool(pool: EnginePool): InferencePool {
  const meta = childMeta(pool, inferencePoolName(pool), ENGINE_COMPONENT);
  return {
    apiVersion: `${INFERENCE_GROUP}/${INFERENCE_VERSION}`,
    kind: "InferencePool",
    metadata: meta,
    spec: {
      selector: { matchLabels: selectorLabels(ENGINE_COMPONENT, pool.metadata.name ?? "") },
      targetPorts: [{ number: POD_PORT }],
      appProtocol: "http",
      endpointPickerRef: {
        group: "",
        kind: "Service",
        name: pickerChildName(pool),
        port: { number: PICKER_GRPC_PORT },
        failureMode: pool.spec.inferencePool?.failureMode ?? "FailClose",
      },
    },
  };
}

/** The picker's flags (see router/src/picker/config.ts); placement as the operator was told (the chart: the router's). */
export function pickerArgs(pool: EnginePool, opts: BuildOptions): string[] {
  const args = ["--grpc-port", String(PICKER_GRPC_PORT), "--port", String(POD_PORT), "--nats-url", opts.natsUrl, "--pool", `${pool.metadata.namespace ?? "default"}/${pool.metadata.name ?? ""}`];
  const p = opts.picker;
  if (p !== undefined) {
    args.push("--placement", p.placement, "--load-factor", String(p.loadFactorPercent), "--prefix-wait-ms", String(p.prefixWaitMs), "--engine-ttl-ms", String(p.engineTtlMs), "--prefix-slack", String(p.prefixSlack));
    args.push("--prefix-warm-sessions", String(p.prefixWarmSessions), "--prefix-warm-window-ms", String(p.prefixWarmWindowMs), "--prefix-warm-min-free", String(p.prefixWarmMinFreePercent));
    args.push("--app-homes", p.appHomes ? "on" : "off");
  }
  return args;
}

/** `creds`: the picker's Secret (the router's NATS identity: it reads app configs and heartbeats; the interrupt key; the API key towards engines). */
export function buildPickerDeployment(pool: EnginePool, opts: BuildOptions, creds?: PodCredentials): V1Deployment {
  const name = pickerChildName(pool);
  const instance = pool.metadata.name ?? "";
  const wiring = credentialsWiring(creds);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: childMeta(pool, name, PICKER_COMPONENT),
    spec: {
      replicas: pool.spec.inferencePool?.pickerReplicas ?? 1,
      selector: { matchLabels: selectorLabels(PICKER_COMPONENT, instance) },
      // A new picker is up before an old one drains: requests are never left without one.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: { ...selectorLabels(PICKER_COMPONENT, instance), "interlace.dev/enginepool": instance },
          ...(creds !== undefined ? { annotations: wiring.annotations } : {}),
        },
        spec: {
          securityContext: POD_SECURITY,
          // The picker drains for --drain-ms, then lets open streams finish for --shutdown-grace-ms (30 s).
          terminationGracePeriodSeconds: 45,
          containers: [
            {
              name: "picker",
              image: opts.image,
              ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
              command: PICKER_COMMAND,
              args: pickerArgs(pool, opts),
              env: [HOME_ENV, ...wiring.env],
              ports: [
                { name: "grpc", containerPort: PICKER_GRPC_PORT, protocol: "TCP" },
                { name: "http", containerPort: POD_PORT, protocol: "TCP" },
              ],
              ...httpProbes(),
              resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } },
              volumeMounts: [{ name: "tmp", mountPath: "/tmp" }, ...wiring.mounts],
              securityContext: CONTAINER_SECURITY,
            },
          ],
          volumes: [{ name: "tmp", emptyDir: {} }, ...wiring.volumes],
        },
      },
    },
  };
}

/** The Service the InferencePool's `endpointPickerRef` names. */
export function buildPickerService(pool: EnginePool): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: childMeta(pool, pickerChildName(pool), PICKER_COMPONENT),
    spec: {
      selector: selectorLabels(PICKER_COMPONENT, pool.metadata.name ?? ""),
      ports: [
        { name: "grpc", port: PICKER_GRPC_PORT, targetPort: "grpc", protocol: "TCP", appProtocol: "kubernetes.io/h2c" },
        { name: "http", port: POD_PORT, targetPort: "http", protocol: "TCP" },
      ],
    },
  };
}

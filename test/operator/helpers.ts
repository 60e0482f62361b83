/**
 * @module Shared pieces of the operator integration tests: polling with a
 * deadline (no fixed sleeps), the chart's own ClusterRole and Secret RBAC
 * (rendered by helm) bound to the operator's ServiceAccount, simulated Deployment availability (no
 * kube-controller-manager runs), and an operator started under that account.
 */
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { AppsV1Api, PatchStrategy, loadAllYaml, setHeaderOptions, type KubeConfig, type KubernetesObject, type V1Deployment } from "@kubernetes/client-node";
import { parse, parseAllDocuments } from "yaml";
import { createLogger, type Logger } from "../../common/src/index.js";
import { parseArgv } from "../../common/src/index.js";
import { parseOperatorOptions } from "../../operator/src/config.js";
import { createOperator, type Operator, type OperatorOverrides } from "../../operator/src/main.js";
import {
  CoreTypes,
  ExponentialBackoffLimiter,
  KubeClient,
  loadKubeConfig,
  type ResourceType,
} from "../../operator/src/runtime/index.js";
import { controlPlaneFor } from "../helpers/control-plane.js";
import { waitFor } from "../helpers/wait.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

export { waitFor };

export const ClusterRoleType: ResourceType = { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", plural: "clusterroles", namespaced: false };
export const ClusterRoleBindingType: ResourceType = { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRoleBinding", plural: "clusterrolebindings", namespaced: false };
const RbacTypes: Record<string, ResourceType> = {
  ClusterRole: ClusterRoleType,
  ClusterRoleBinding: ClusterRoleBindingType,
  Role: { group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", plural: "roles", namespaced: true },
  RoleBinding: { group: "rbac.authorization.k8s.io", version: "v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
};

/** Chart values that shape the operator's Secret RBAC. */
export interface ChartRbacOptions {
  /** `rbac.secretNamespaces` (default: none listed, every namespace). */
  secretNamespaces?: readonly string[];
  /** More `--set` values (e.g. `nats.auth.secretName=provided`). */
  set?: readonly string[];
}

/**
 * The chart's Secret RBAC (templates/operator-secrets-rbac.yaml) as helm
 * renders it for a release `name` in `namespace` (its trust root and router
 * Secrets are `<name>-nats-auth` and `<name>-router-credentials`), with
 * `rbac.secretNamespaces` and other `--set` values when given.
 */
export async function chartSecretRbac(namespace: string, name: string, options: ChartRbacOptions = {}): Promise<KubernetesObject[]> {
  const secretNamespaces = options.secretNamespaces ?? [];
  const helm = path.join(process.env["INTERLACE_BIN"] ?? path.join(ROOT, ".cache/bin"), "helm");
  const args = ["template", name, path.join(ROOT, "charts/interlace"), "--namespace", namespace, "--set", `fullnameOverride=${name}`, "--show-only", "templates/operator-secrets-rbac.yaml"];
  if (secretNamespaces.length > 0) args.push("--set", `rbac.secretNamespaces={${secretNamespaces.join(",")}}`);
  for (const s of options.set ?? []) args.push("--set", s);
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(helm, args, { env: { ...process.env, HELM_CACHE_HOME: "/tmp/interlace-helm/cache", HELM_CONFIG_HOME: "/tmp/interlace-helm/config", HELM_DATA_HOME: "/tmp/interlace-helm/data" } }, (err, out, stderr) =>
      err !== null ? reject(new Error(`helm template: ${stderr || err.message}`)) : resolve(out),
    ),
  );
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

/**
 * The operator ClusterRole's rules exactly as the chart ships them: the
 * `rules:` block of charts/interlace/templates/clusterrole.yaml holds no
 * template expressions, so it parses as plain YAML.
 */
export async function chartOperatorRules(): Promise<unknown[]> {
  const text = await readFile(path.join(ROOT, "charts/interlace/templates/clusterrole.yaml"), "utf8");
  const firstDoc = text.split(/^---$/m)[0] ?? "";
  const start = firstDoc.indexOf("\nrules:");
  if (start < 0) throw new Error("no rules: block in the chart's clusterrole.yaml");
  const block = firstDoc.slice(start).split(/^\{\{-? end/m)[0] ?? "";
  if (block.includes("{{")) throw new Error("the chart's ClusterRole rules are templated; render them with helm instead");
  const rules = (parse(block) as { rules: unknown[] }).rules;
  if (!Array.isArray(rules) || rules.length === 0) throw new Error("empty rules in the chart's ClusterRole");
  return rules;
}

/** The part of the control-plane helper these tests use: kubeconfig files only. */
export interface KubeconfigSource {
  kubeconfigPath: string;
  kubeconfigPathFor(namespace: string, name: string): Promise<string>;
}

/** Cluster access as the control plane's admin. */
export function adminAccess(cp: KubeconfigSource): KubeConfig {
  return loadKubeConfig(cp.kubeconfigPath);
}

export const CrdType: ResourceType = { group: "apiextensions.k8s.io", version: "v1", kind: "CustomResourceDefinition", plural: "customresourcedefinitions", namespaced: false };

/** Applies the generated CRDs from crds/ and waits until each is Established. */
export async function installGeneratedCrds(admin: KubeClient): Promise<void> {
  const dir = path.join(ROOT, "crds");
  const names: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort()) {
    // loadAllYaml turns the wire form into the library's models: applied raw, its
    // serializer would drop the schema's `x-kubernetes-*` keys (their model
    // property names differ from the wire names).
    for (const crd of loadAllYaml(await readFile(path.join(dir, file), "utf8")) as (KubernetesObject | null)[]) {
      if (!crd) continue;
      await admin.apply(CrdType, crd, { fieldManager: "test", force: true });
      names.push(crd.metadata?.name ?? "");
    }
  }
  for (const name of names) {
    await waitFor(`CRD ${name} established`, async () => {
      const crd = await admin.get<KubernetesObject & { status?: { conditions?: { type: string; status: string }[] } }>(CrdType, undefined, name);
      return crd?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    });
  }
}

/**
 * Creates the chart's ClusterRole and Secret RBAC (rendered with `rbac`'s values) and binds them to
 * `namespace/name`; returns cluster access acting as that account.
 */
export async function operatorAccount(cp: KubeconfigSource, namespace: string, name: string, rbac: ChartRbacOptions = {}): Promise<KubeConfig> {
  const admin = new KubeClient(adminAccess(cp));
  const role = `${name}-operator`;
  await admin.apply(ClusterRoleType, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: role }, rules: await chartOperatorRules() } as KubernetesObject, {
    fieldManager: "test",
    force: true,
  });
  const access = loadKubeConfig(await cp.kubeconfigPathFor(namespace, name));
  await admin.apply(
    ClusterRoleBindingType,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: role },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    } as KubernetesObject,
    { fieldManager: "test", force: true },
  );
  for (const obj of await chartSecretRbac(namespace, name, rbac)) {
    const type = RbacTypes[obj.kind ?? ""];
    if (type === undefined) throw new Error(`unexpected ${obj.kind} in the chart's Secret RBAC`);
    if (type.namespaced) {
      const ns = obj.metadata?.namespace ?? namespace;
      await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }).catch(() => undefined);
    }
    await admin.apply(type, obj, { fieldManager: "test", force: true });
  }
  return access;
}

/** What a Deployment controller would write once every replica is up (a merge patch of the status subresource). */
export async function markDeploymentAvailable(admin: KubeClient, namespace: string, name: string): Promise<V1Deployment> {
  const dep = await admin.get<V1Deployment>(CoreTypes.Deployment, namespace, name);
  if (!dep) throw new Error(`deployment ${namespace}/${name} not found`);
  const n = dep.spec?.replicas ?? 1;
  const status = {
    observedGeneration: dep.metadata?.generation,
    replicas: n,
    updatedReplicas: n,
    readyReplicas: n,
    availableReplicas: n,
    conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable", message: "simulated by the test" }],
  };
  return admin.kubeConfig
    .makeApiClient(AppsV1Api)
    .patchNamespacedDeploymentStatus({ namespace, name, body: { status } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
}

/** The status of a condition type on an object, or undefined. */
export function condition(obj: { status?: { conditions?: { type: string; status: string; reason: string }[] } } | null, type: string): { status: string; reason: string } | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

export function testLogger(name: string): Logger {
  return createLogger(name, process.env["LOG_LEVEL"] ?? "error");
}

/** An in-process operator with the given flags, a fast retry limiter and no process metrics. */
export function startTestOperator(argv: string[], access: KubeConfig, log: Logger, overrides: OperatorOverrides = {}): Operator {
  const opts = parseOperatorOptions({ flags: parseArgv(argv), env: {} });
  return createOperator(opts, log, {
    access,
    rateLimiter: () => new ExponentialBackoffLimiter({ baseMs: 50, maxMs: 2000 }),
    watchTimeoutSeconds: 60,
    ...overrides,
  });
}

export interface OperatorStack {
  cp: KubeconfigSource;
  admin: KubeClient;
  operator: Operator;
  /** The operator's `/metrics` text. */
  metricsText(): Promise<string>;
}

/**
 * A control plane with the generated CRDs and `namespace`, and an operator
 * started with `argv` under the chart's ServiceAccount (stopped when `t` ends).
 */
export async function startOperatorStack(t: Parameters<typeof controlPlaneFor>[0], namespace: string, argv: string[]): Promise<OperatorStack> {
  const cp = await controlPlaneFor(t);
  const admin = new KubeClient(adminAccess(cp));
  await installGeneratedCrds(admin);
  await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  const operator = startTestOperator(argv, await operatorAccount(cp, "interlace-system", "interlace"), testLogger("operator"));
  t.teardown(() => operator.stop());
  await operator.start();
  const metricsText = async (): Promise<string> => (await fetch(`http://127.0.0.1:${operator.manager.probePort}/metrics`)).text();
  return { cp, admin, operator, metricsText };
}

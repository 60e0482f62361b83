/**
 * The operator as credential authority, against a real etcd + kube-apiserver
 * (RBAC on, the chart's ClusterRole) and a real nats-server configured from
 * what the operator wrote: at first start it makes the trust root and the
 * router's Secret; for an EnginePool and a ToolPool it writes one credentials
 * Secret each (owned by the pool, with the CA) that the rendered Deployments
 * mount; a resync does not re-mint. Then a nats-server trusting the operator's
 * root accepts each minted identity for its own subjects — an engine and a
 * runner carry a call end to end over TLS — and refuses it everything else.
 */
import t from "tap";
import { readFileSync } from "node:fs";
import type { KubernetesObject, V1Deployment, V1Secret } from "@kubernetes/client-node";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { controlPlaneFor } from "../helpers/control-plane.js";
import { EnginePoolKind, ToolPoolKind, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { CoreTypes, KubeClient } from "../../operator/src/runtime/index.js";
import { CREDENTIALS_ANNOTATION } from "../../operator/src/resources/index.js";
import { ensureTrustRoot, TrustKey, trustRootSecretData } from "../../operator/src/credentials/index.js";
import { createTrustRoot } from "../../common/src/security/nats-credentials.js";
import type { NatsTrustRoot } from "../../common/src/security/nats-credentials.js";
import { natsConnectOptions, type NatsSecurity } from "../../common/src/security/nats-connect.js";
import { CREDENTIALS_DIR } from "../../common/src/security/credential-files.js";
import { namespaceKey } from "../../common/src/security/derived-keys.js";
import { poolStream, RUNNERS_CONSUMER, toolSubject } from "../../common/src/protocol/index.js";
import { createNatsSecurity, removeNatsSecurity, type NatsSecurityFixture } from "../../hack/nats.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { makeCall, POOL, poolConfig, startExecutor, startRunner } from "../nats/fixtures.js";
import { adminAccess, installGeneratedCrds, operatorAccount, startTestOperator, testLogger, waitFor } from "./helpers.js";

const NS = POOL.namespace; // "default": the pools match the NATS fixtures' pool
const RELEASE_NS = "interlace-system";

// The NATS CA and server certificate (what the chart's TLS Secret holds); the trust root comes from the operator.
const tls = await createNatsSecurity({ auth: false, tls: true });
t.teardown(() => removeNatsSecurity(tls));

const cp = await controlPlaneFor(t);
const admin = new KubeClient(adminAccess(cp));
await installGeneratedCrds(admin);
await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: RELEASE_NS } }).catch(() => undefined);
// The chart with rbac.secretNamespaces: Secrets only in the pools' namespace and, by name, the operator's own.
const saConfig = await operatorAccount(cp, RELEASE_NS, "interlace", { secretNamespaces: [NS] });
const operator = startTestOperator(
  [
    "--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev",
    "--nats-auth-secret", "interlace-nats-auth",
    "--router-credentials-secret", "interlace-router-credentials",
    "--nats-ca", tls.tls!.caFile,
    "--credentials-namespace", RELEASE_NS,
  ],
  saConfig,
  testLogger("operator"),
);
t.teardown(() => operator.stop());
await operator.start();

const data = (s: V1Secret | null, key: string): string | undefined => (s?.data?.[key] !== undefined ? Buffer.from(s.data[key]!, "base64").toString("utf8") : undefined);
const secret = (ns: string, name: string): Promise<V1Secret | null> => admin.get<V1Secret>(CoreTypes.Secret, ns, name);

const root = await secret(RELEASE_NS, "interlace-nats-auth");
const router = await secret(RELEASE_NS, "interlace-router-credentials");

// Every await at the top level comes before the first subtest: tap ends the file once its
// queued subtests are done, which can be before later top-level code has run.
const enginePool: EnginePool = {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "EnginePool",
  metadata: { name: "pool", namespace: NS },
  spec: { replicas: 1, model: { path: "/models/m.gguf" }, runtime: { backend: "llama-cpp" } },
};
const toolPool: ToolPool = {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name: POOL.name, namespace: NS },
  spec: { tools: [{ name: "echo", description: "echo", parameters: { type: "object" }, builtin: { name: "echo" } }] },
};
await admin.create(EnginePoolKind, enginePool as KubernetesObject);
await admin.create(ToolPoolKind, toolPool as KubernetesObject);
const engineDep = await waitFor("engine deployment", () => admin.get<V1Deployment>(CoreTypes.Deployment, NS, "pool-engine").then((d) => d ?? undefined));
const runnerDep = await waitFor("runner deployment", () => admin.get<V1Deployment>(CoreTypes.Deployment, NS, "tools-tools").then((d) => d ?? undefined));
const engineSecret = await secret(NS, "pool-engine-credentials");
const runnerSecret = await secret(NS, "tools-tools-credentials");

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
const envOf = (dep: V1Deployment): Record<string, string> =>
  Object.fromEntries(((dep.spec?.template.spec?.containers[0]?.env ?? []) as Env[]).map((e) => [e.name, e.value ?? `${e.valueFrom?.secretKeyRef?.name}/${e.valueFrom?.secretKeyRef?.key}`]));


t.test("first start: the trust root and the router's Secret", async (t) => {
  t.match(data(root, TrustKey.AuthConf), /^operator: ey[\s\S]*resolver: MEMORY/, "auth.conf for nats-server");
  t.match(data(root, TrustKey.AccountSeed), /^SA/, "the account seed");
  t.match(data(root, "interrupt.key"), /^[0-9a-f]{64}$/);
  t.match(data(root, "engine-api.key"), /^[0-9a-f]{64}$/);
  t.match(data(root, "owner-tag.key"), /^[0-9a-f]{64}$/);
  t.not(data(root, "owner-tag.key"), data(root, "interrupt.key"), "owner tags and interrupts have separate keys");
  t.notMatch(data(root, TrustKey.AuthConf), /SA[A-Z2-7]{50}/, "no seed in what nats-server mounts");
  t.same(Object.keys(router?.data ?? {}).sort(), ["ca.crt", "engine-api.key", "nats.creds", "owner-tag.key"], "the router signs owner tags, not interrupts");
  t.equal(data(router, "ca.crt"), readFileSync(tls.tls!.caFile, "utf8"), "the router gets the CA");
  t.equal(data(router, "owner-tag.key"), data(root, "owner-tag.key"), "the router holds the master owner-tag key");
  t.notOk(data(router, TrustKey.AccountSeed), "the router never sees the account seed");
  // A second operator (the other replica) reads the same root instead of making another.
  const again = startTestOperator(
    ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--nats-auth-secret", "interlace-nats-auth", "--credentials-namespace", RELEASE_NS],
    saConfig,
    testLogger("operator-2"),
    { probes: false },
  );
  await again.credentials!.start();
  t.equal(data(await secret(RELEASE_NS, "interlace-nats-auth"), TrustKey.AccountSeed), data(root, TrustKey.AccountSeed), "one root for every replica");
});

t.test("a provided trust root (hack/nats-keys.ts layout) is used as it is; missing keys are added", async (t) => {
  const made = trustRootSecretData(await createTrustRoot());
  delete made["interrupt.key"];
  delete made["engine-api.key"];
  delete made["owner-tag.key"];
  await admin.create(CoreTypes.Secret, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "provided", namespace: RELEASE_NS },
    data: Object.fromEntries(Object.entries(made).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  } as V1Secret);
  // As the chart would run an operator given nats.auth.secretName=provided: its RBAC names that Secret.
  const providedAccount = await operatorAccount(cp, RELEASE_NS, "provided-op", { secretNamespaces: [NS], set: ["nats.auth.secretName=provided"] });
  const material = await ensureTrustRoot(new KubeClient(providedAccount), RELEASE_NS, "provided", testLogger("trust"));
  t.equal(material.accountSeed, made[TrustKey.AccountSeed], "its account seed");
  const after = await secret(RELEASE_NS, "provided");
  t.equal(data(after, "interrupt.key"), material.interruptKey, "the interrupt key was added");
  t.equal(data(after, "engine-api.key"), material.engineApiKey, "the engine key was added");
  t.equal(data(after, "owner-tag.key"), material.ownerTagKey, "the owner-tag key was added");
  t.equal(data(after, TrustKey.AuthConf), made[TrustKey.AuthConf], "the rest untouched");
  await admin.create(CoreTypes.Secret, { apiVersion: "v1", kind: "Secret", metadata: { name: "broken", namespace: RELEASE_NS }, data: { x: "eA==" } } as V1Secret);
  const brokenAccount = await operatorAccount(cp, RELEASE_NS, "broken-op", { secretNamespaces: [NS], set: ["nats.auth.secretName=broken"] });
  await t.rejects(ensureTrustRoot(new KubeClient(brokenAccount), RELEASE_NS, "broken", testLogger("trust")), /has no "account.seed": make it with hack\/nats-keys.ts/, "a Secret without a seed is a clear error");
});

t.test("each pool's Secret, and the Deployment that mounts it", async (t) => {
  t.same(Object.keys(engineSecret?.data ?? {}).sort(), ["api-keys", "ca.crt", "interrupt.key", "nats.creds"], "engine: identity, CA, interrupt key, API keys");
  t.equal(data(engineSecret, "interrupt.key"), namespaceKey(data(root, "interrupt.key")!, "interrupt", NS), "engine: its namespace's derived interrupt key");
  t.not(data(engineSecret, "interrupt.key"), data(root, "interrupt.key"), "the master interrupt key never leaves the release namespace");
  t.same(Object.keys(runnerSecret?.data ?? {}).sort(), ["ca.crt", "nats.creds"], "runner: identity and CA only (no interrupt key)");
  t.equal(data(engineSecret, "api-keys"), `router:${data(root, "engine-api.key")}\n`, "engines accept the router's key");
  t.equal(data(engineSecret, "ca.crt"), readFileSync(tls.tls!.caFile, "utf8"));
  for (const [s, kind] of [[engineSecret, "EnginePool"], [runnerSecret, "ToolPool"]] as const) {
    t.match(s?.metadata?.ownerReferences?.[0], { kind, controller: true }, `${kind}'s Secret is garbage-collected with it`);
  }
  for (const [dep, s, name] of [[engineDep, engineSecret, "pool-engine-credentials"], [runnerDep, runnerSecret, "tools-tools-credentials"]] as const) {
    const pod = dep.spec!.template;
    t.same(pod.spec?.volumes?.find((v) => v.name === "credentials")?.secret, { secretName: name, defaultMode: 0o440 }, `${dep.metadata?.name} mounts ${name}`);
    t.ok(pod.spec?.containers[0]?.volumeMounts?.some((m) => m.name === "credentials" && m.mountPath === CREDENTIALS_DIR && m.readOnly === true));
    t.match(pod.metadata?.annotations?.[CREDENTIALS_ANNOTATION], /^[0-9a-f]{16}$/, "pods roll when what they read at start changes");
    // The Secret's fingerprint covers everything; the pod's leaves out the key rings pods read in place (tenancy-attacks.test.ts rotates one without a roll).
    if (s === runnerSecret) t.equal(pod.metadata?.annotations?.[CREDENTIALS_ANNOTATION], s?.metadata?.annotations?.[CREDENTIALS_ANNOTATION], "a runner has no key ring: the same fingerprint");
    else t.not(pod.metadata?.annotations?.[CREDENTIALS_ANNOTATION], s?.metadata?.annotations?.[CREDENTIALS_ANNOTATION], "an engine's leaves its interrupt key ring out");
    const env = envOf(dep);
    t.equal(env["INTERLACE_NATS_CREDS"], `${CREDENTIALS_DIR}/nats.creds`);
    t.equal(env["INTERLACE_NATS_CA"], `${CREDENTIALS_DIR}/ca.crt`);
  }
  const engineEnv = envOf(engineDep);
  t.equal(engineEnv["INTERLACE_INTERRUPT_KEY_FILE"], `${CREDENTIALS_DIR}/interrupt.key`, "keys are files, not environment values");
  t.equal(engineEnv["INTERLACE_API_KEYS_FILE"], `${CREDENTIALS_DIR}/api-keys`);
  for (const dep of [engineDep, runnerDep]) {
    t.equal(envOf(dep)["INTERLACE_AUTH"], "required", `${dep.metadata?.name}: a missing credential stops the pod`);
    t.notOk(Object.values(envOf(dep)).some((v) => /[0-9a-f]{64}/.test(v)), `${dep.metadata?.name}: no key in its environment`);
  }
  t.notOk(envOf(runnerDep)["INTERLACE_INTERRUPT_KEY_FILE"], "runners never get the interrupt key");
});

t.test("a resync does not re-mint; the operator's account cannot list Secrets", async (t) => {
  const before = data(engineSecret, "nats.creds");
  await admin.mergePatch(EnginePoolKind, NS, "pool", { spec: { replicas: 2 } });
  await waitFor("scaled", () => admin.get<V1Deployment>(CoreTypes.Deployment, NS, "pool-engine").then((d) => d?.spec?.replicas === 2 || undefined));
  t.equal(data(await secret(NS, "pool-engine-credentials"), "nats.creds"), before, "same credentials after a spec change");
  const denied = await new KubeClient(saConfig).list(CoreTypes.Secret, NS).then(() => null, (err: unknown) => err);
  t.match(denied, { status: 403 });
});

t.test("the operator's account cannot read or change a Secret it did not make", async (t) => {
  const sa = new KubeClient(saConfig);
  await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: "unrelated" } }).catch(() => undefined);
  const unrelated = (namespace: string, name: string): V1Secret => ({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, data: { password: Buffer.from("hunter2").toString("base64") } });
  await admin.create(CoreTypes.Secret, unrelated("unrelated", "db"));
  await admin.create(CoreTypes.Secret, unrelated(RELEASE_NS, "interlace-router-api-keys"));
  const status = (p: Promise<unknown>): Promise<unknown> => p.then(() => "allowed", (err: unknown) => (err as { status?: number }).status);
  t.equal(await status(sa.get(CoreTypes.Secret, "unrelated", "db")), 403, "another namespace's Secret: get refused by the API server");
  t.equal(await status(sa.apply(CoreTypes.Secret, unrelated("unrelated", "db"), { fieldManager: "x", force: true })), 403, "… and patch refused");
  t.equal(await status(sa.get(CoreTypes.Secret, RELEASE_NS, "interlace-router-api-keys")), 403, "a Secret beside its own in the release namespace: get refused (its own are named)");
  t.equal(await status(sa.replace(CoreTypes.Secret, unrelated(RELEASE_NS, "interlace-router-api-keys"))), 403, "… and update refused");
  const poolSecret = await secret(NS, "pool-engine-credentials");
  t.equal(await status(sa.replace(CoreTypes.Secret, poolSecret!)), 403, "even its pools' Secrets are never updated (server-side apply only)");
  t.equal(await status(sa.get(CoreTypes.Secret, NS, "pool-engine-credentials")), "allowed", "its pools' Secrets: readable");
});

t.test("a nats-server trusting the operator's root accepts each minted identity for its own subjects only", async (t) => {
  const trust = JSON.parse(data(root, TrustKey.Trust)!) as Omit<NatsTrustRoot, "accountSeed" | "operatorSeed">;
  const fixture: NatsSecurityFixture = { dir: tls.dir, tls: tls.tls!, root: { ...trust, accountSeed: data(root, TrustKey.AccountSeed)!, operatorSeed: data(root, TrustKey.OperatorSeed)! } };
  const server = await startNatsServer(t, { security: fixture });
  const caFile = tls.tls!.caFile;
  const sec = (s: V1Secret | null): NatsSecurity => ({ creds: data(s, "nats.creds")!, caFile });
  const open = async (s: NatsSecurity): Promise<NatsConnection> => {
    const nc = await connect({ servers: server.url, ...natsConnectOptions(s), reconnect: false });
    t.teardown(() => nc.close());
    return nc;
  };
  const denied = async (nc: NatsConnection, subject: string, body = ""): Promise<boolean> => {
    try {
      await nc.request(subject, body, { timeout: 3_000 });
      return false;
    } catch (err) {
      return /permission/i.test(String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? ""));
    }
  };

  await t.rejects(connect({ servers: server.url, tls: { caFile }, reconnect: false }), /Authorization|auth/i, "no credentials: refused");

  // The engine pool's identity and the runner's, as their pods use them: a call end to end over TLS.
  await startRunner(t, server.url, poolConfig(), { security: sec(runnerSecret) });
  const executor = await startExecutor(t, server.url, { enginePod: "pool-engine-7d9f-abcde", security: sec(engineSecret), interruptKey: data(engineSecret, "interrupt.key")! });
  const result = await executor.execute(makeCall("s1", "echo", { text: "minted" }));
  t.equal(result.output, "minted", "engine and runner credentials are accepted for their subjects");

  const engine = await open(sec(engineSecret));
  const runner = await open(sec(runnerSecret));
  const routerNc = await open(sec(router));
  const stream = poolStream(POOL);
  t.notOk(await denied(engine, `$JS.API.STREAM.INFO.${stream}`), "engine: stream metadata allowed");
  t.ok(await denied(engine, toolSubject({ namespace: "other", name: "tools" }, "echo"), "{}"), "engine: another namespace's tools refused");
  t.ok(await denied(engine, `$JS.API.CONSUMER.MSG.NEXT.${stream}.${RUNNERS_CONSUMER}`, JSON.stringify({ batch: 1 })), "engine: a pool's work queue refused");
  t.ok(await denied(engine, `$JS.API.STREAM.DELETE.${stream}`), "engine: stream deletion refused");
  t.ok(await denied(runner, toolSubject(POOL, "echo"), "{}"), "runner: publishing calls refused");
  t.ok(await denied(runner, `$JS.API.CONSUMER.MSG.NEXT.${poolStream({ namespace: NS, name: "other" })}.${RUNNERS_CONSUMER}`, JSON.stringify({ batch: 1 })), "runner: another pool's queue refused");
  t.ok(await denied(runner, `$JS.API.STREAM.DELETE.INTERLACE_INTR_${NS}`), "runner: stream deletion refused");
  t.notOk(await denied(routerNc, "$JS.API.STREAM.INFO.KV_interlace-apps"), "router: app configs allowed");
  t.ok(await denied(routerNc, toolSubject(POOL, "echo"), "{}"), "router: calling tools refused");
  t.ok(await denied(routerNc, `$JS.API.STREAM.DELETE.${stream}`), "router: stream deletion refused");
  // The operator's own identity (what its pool cleanup and live state connect with).
  const op = await open(operator.credentials!.natsSecurity());
  t.notOk(await denied(op, `$JS.API.STREAM.INFO.${stream}`), "operator: the JetStream API");
  t.ok(await denied(op, toolSubject(POOL, "echo"), "{}"), "operator: calling tools refused");
});

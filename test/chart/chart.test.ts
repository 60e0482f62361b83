/**
 * @module The Helm chart with the real helm: lint, template with default and
 * non-default values (structure, security settings, least-privilege RBAC),
 * values.schema.json rejecting bad values, the dashboard's metrics existing
 * in the code, and the rendered manifests applied server-side to a real
 * kube-apiserver, where the operator's ServiceAccount can do exactly what the
 * ClusterRole grants.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { createTrustRoot } from "../../common/src/security/nats-credentials.js";
import { natsServerBinary } from "../../hack/nats.js";
import { trustRootSecretData } from "../../operator/src/credentials/trust-root.js";
import { applyManifest, controlPlaneFor, kubeRequest, waitCrdServing, type Manifest } from "../helpers/control-plane.js";

const execFileP = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHART = path.join(ROOT, "charts/interlace");
const HELM = path.join(process.env["INTERLACE_BIN"] ?? path.join(ROOT, ".cache/bin"), "helm");
const NS = "interlace-system";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function helm(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(HELM, args, { maxBuffer: 32 << 20, env: { ...process.env, HELM_CACHE_HOME: "/tmp/interlace-helm/cache", HELM_CONFIG_HOME: "/tmp/interlace-helm/config", HELM_DATA_HOME: "/tmp/interlace-helm/data" } }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, stdout, stderr });
    });
  });
}

async function render(set: string[] = [], extra: string[] = []): Promise<Manifest[]> {
  const args = ["template", "interlace", CHART, "--namespace", NS, ...extra];
  for (const s of set) args.push("--set", s);
  const r = await helm(args);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

function find(ms: Manifest[], kind: string, name?: string): any {
  return ms.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
}

function podSpecs(ms: Manifest[]): [string, any][] {
  return ms.filter((m) => m.kind === "Deployment" || m.kind === "StatefulSet").map((m) => [`${m.kind}/${m.metadata.name}`, (m as any).spec.template.spec]);
}

t.before(() => {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run bash hack/install-tools.sh`);
});

t.test("helm lint", async (t) => {
  const r = await helm(["lint", CHART, "--strict"]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  const r2 = await helm(["lint", CHART, "--strict", "--set", "nats.enabled=false", "--set", "nats.externalUrl=nats://nats.infra:4222", "--set", "serviceMonitor.enabled=true"]);
  t.equal(r2.code, 0, r2.stdout + r2.stderr);
});

t.test("helm template with default values", async (t) => {
  const ms = await render();
  const dep = find(ms, "Deployment", "interlace-operator");
  t.ok(dep, "operator Deployment");
  t.equal(dep.spec.replicas, 2, "two operator replicas");
  const container = dep.spec.template.spec.containers[0];
  t.same(container.command, ["node", "dist/operator/src/main.js"], "the operator's entrypoint in the image");
  t.ok(container.args.includes("--leader-elect=true"), "leader election on");
  t.ok(container.args.includes("--key-grace-ms=600000"), "a rotated app key's old value: accepted 10 min (operator.keyGraceSeconds)");
  t.notOk(container.args.some((a: string) => a.startsWith("--network-policy-release")), "per-pool NetworkPolicies are off by default");
  const seeds = [0, 1, 2].map((i) => `tls://interlace-nats-${i}.interlace-nats-headless.interlace-system.svc:4222`).join(",");
  t.ok(container.args.includes(`--nats-url=${seeds}`), "in-chart NATS URL: every node of the cluster, over TLS");
  t.equal(dep.spec.template.spec.serviceAccountName, "interlace");
  t.ok(find(ms, "ServiceAccount", "interlace"));
  t.ok(find(ms, "Service", "interlace"));
  // The router: two stateless replicas behind a Service that AgentApp endpoints name.
  const router = find(ms, "Deployment", "interlace-router");
  t.equal(router.spec.replicas, 2, "two router replicas");
  t.same(router.spec.template.spec.containers[0].command, ["node", "dist/router/src/main.js"]);
  t.ok(router.spec.template.spec.containers[0].args.includes(`--nats-url=${seeds}`), "the router reaches every NATS node");
  t.same(router.spec.template.spec.containers[0].args.filter((a: string) => a.startsWith("--cold-start-")), ["--cold-start-hold-ms=60000", "--cold-start-max-held=100"], "the cold-start hold from router.coldStart");
  t.same(router.spec.template.spec.containers[0].args.filter((a: string) => a.startsWith("--queue-ms") || a.startsWith("--max-queued")), ["--queue-ms=30000", "--max-queued=100"], "the capacity queue from router.queue");
  t.same(router.spec.template.spec.containers[0].args.filter((a: string) => a.startsWith("--prefix-warm-")), ["--prefix-warm-sessions=3", "--prefix-warm-window-ms=20000", "--prefix-warm-min-free=50"], "hot-prefix warming from router.prefixWarm");
  t.ok(router.spec.template.spec.containers[0].args.includes("--app-homes=on"), "apps' home engines on by default (router.appHomes)");
  t.ok(find(ms, "Service", "interlace-router"), "router Service");
  t.ok(container.args.includes("--router-url=http://interlace-router.interlace-system.svc:8080"), "endpoints name the router Service");
  const binding = find(ms, "ClusterRoleBinding", "interlace-operator");
  t.same(binding.subjects, [{ kind: "ServiceAccount", name: "interlace", namespace: NS }]);

  const sts = find(ms, "StatefulSet", "interlace-nats");
  t.ok(sts, "NATS StatefulSet");
  t.equal(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage, "2Gi", "JetStream PVC");
  t.match(find(ms, "ConfigMap", "interlace-nats").data["nats.conf"], /jetstream \{[^}]*store_dir: \/data\/jetstream/s, "JetStream enabled on the PVC");

  const dash = find(ms, "ConfigMap", "interlace-dashboard-interlace");
  t.equal(dash.metadata.labels.grafana_dashboard, "1", "Grafana sidecar label");
  const json = JSON.parse(dash.data["interlace.json"]);
  const exprs = JSON.stringify(json.panels.map((p: { targets?: unknown }) => p.targets ?? []));
  for (const metric of ["ttft_seconds", "tpot_seconds", "injection_delay_seconds", "traps_total", "tool_calls_total", "toolrunner_calls_total", "reconcile_total", "workqueue_depth"]) {
    t.match(exprs, metric, `dashboard plots ${metric}`);
  }
  t.notOk(find(ms, "ServiceMonitor"), "no ServiceMonitor by default");

  for (const [name, pod] of podSpecs(ms)) {
    t.equal(pod.securityContext.runAsNonRoot, true, `${name} runs as non-root`);
    for (const c of pod.containers) {
      t.equal(c.securityContext.readOnlyRootFilesystem, true, `${name}/${c.name} read-only root filesystem`);
      t.same(c.securityContext.capabilities.drop, ["ALL"], `${name}/${c.name} drops all capabilities`);
      t.equal(c.securityContext.allowPrivilegeEscalation, false, `${name}/${c.name} no privilege escalation`);
      t.ok(c.resources?.requests, `${name}/${c.name} has resource requests`);
    }
  }
});

t.test("security objects: a 3-node TLS NATS cluster, its certificate, NetworkPolicies", async (t) => {
  const ms = await render();
  t.ok(find(ms, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.some((a: string) => a.startsWith("--nats-url=tls://")), "clients are told to use TLS");
  const sts = find(ms, "StatefulSet", "interlace-nats");
  t.equal(sts.spec.replicas, 3, "three NATS nodes by default");
  const conf: string = find(ms, "ConfigMap", "interlace-nats").data["nats.conf"];
  t.match(conf, /tls \{\s*cert_file: \/etc\/nats-tls\/tls.crt/, "clients must use TLS");
  t.match(conf, /cluster \{[\s\S]*routes: \[[\s\S]*interlace-nats-2\.interlace-nats-headless[\s\S]*verify: true/, "routes to every node, mutual TLS between nodes");
  t.match(conf, /include "\.\.\/nats-auth\/auth.conf"/, "JWT authentication on by default");
  t.same(
    sts.spec.template.spec.volumes.find((v: { name: string }) => v.name === "auth").secret,
    { secretName: "interlace-nats-auth", items: [{ key: "auth.conf", path: "auth.conf" }] },
    "nats-server mounts only auth.conf of the trust root the operator makes (never the account seed)",
  );
  const volumes = sts.spec.template.spec.volumes.map((v: { name: string; secret?: { secretName: string } }) => [v.name, v.secret?.secretName]);
  t.same(volumes.find((v: string[]) => v[0] === "tls"), ["tls", "interlace-nats-tls"]);
  const secret = find(ms, "Secret", "interlace-nats-tls");
  t.equal(secret.type, "kubernetes.io/tls", "a generated certificate when no Secret or cert-manager is given");
  const pem = Buffer.from(secret.data["tls.crt"], "base64").toString();
  t.match(pem, /BEGIN CERTIFICATE/);
  const { X509Certificate } = await import("node:crypto");
  const cert = new X509Certificate(pem);
  t.match(cert.subjectAltName ?? "", /\*\.interlace-nats-headless\.interlace-system\.svc/, "valid for every node's DNS name");
  t.ok(cert.verify(new X509Certificate(Buffer.from(secret.data["ca.crt"], "base64")).publicKey), "signed by the shipped CA");

  const nats = find(ms, "NetworkPolicy", "interlace-nats");
  t.same(nats.spec.ingress.map((r: { ports: { port: number }[] }) => r.ports[0]!.port), [4222, 6222, 8222]);
  t.same(nats.spec.ingress[0].from[0].podSelector.matchLabels, { "app.kubernetes.io/name": "interlace" }, "clients only from Interlace pods");
  const prometheus = [{ namespaceSelector: {}, podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } } }];
  t.same(nats.spec.ingress[2].from, prometheus, "the monitor port only from Prometheus pods, not from every namespace");
  const engines = find(ms, "NetworkPolicy", "interlace-engines");
  t.same(engines.spec.podSelector.matchLabels, { "app.kubernetes.io/name": "interlace", "app.kubernetes.io/component": "engine" });
  const from = engines.spec.ingress[0].from;
  t.same(from.map((f: { podSelector: { matchLabels: Record<string, string> } }) => f.podSelector.matchLabels["app.kubernetes.io/component"]), ["operator", "router"], "only the operator/router reach engine pods");
  t.same(
    from.map((f: { namespaceSelector?: { matchLabels: Record<string, string> } }) => f.namespaceSelector?.matchLabels),
    [{ "kubernetes.io/metadata.name": "interlace-system" }, { "kubernetes.io/metadata.name": "interlace-system" }],
    "both peers in the release namespace: without a namespaceSelector the router in the release namespace cannot reach engines elsewhere",
  );
  t.equal(from[1].podSelector.matchLabels["app.kubernetes.io/instance"], "interlace", "this release's router, not any pod labelled router");
  t.same(engines.spec.ingress.map((r: { ports: { port: number }[] }) => r.ports[0]!.port), [8080, 8080]);
  t.same(engines.spec.ingress[1].from, prometheus, "and Prometheus (the pod port serves /metrics); nothing else by default");
  t.same(find(ms, "NetworkPolicy", "interlace-toolrunners").spec.ingress, [{ from: prometheus, ports: [{ port: 8080, protocol: "TCP" }] }], "runners: only Prometheus, on the metrics port");
  const operatorArgs: string[] = find(ms, "Deployment", "interlace-operator").spec.template.spec.containers[0].args;
  t.same(operatorArgs.filter((a) => a.startsWith("--picker-")), ["--picker-placement=prefix-affinity", "--picker-load-factor=125", "--picker-prefix-slack=2", "--picker-prefix-wait-ms=1000", "--picker-engine-ttl-ms=3000", "--picker-prefix-warm-sessions=3", "--picker-prefix-warm-window-ms=20000", "--picker-prefix-warm-min-free=50", "--picker-app-homes=on"], "endpoint pickers place (and warm) as the router does");
  t.same(find(ms, "NetworkPolicy", "interlace-endpoint-pickers").spec.ingress.map((r: { ports: { port: number }[] }) => r.ports[0]!.port), [8080], "no gateway is let in by default");
  const gateway = await render(["networkPolicy.gatewayPeers[0].namespaceSelector.matchLabels.gateway=envoy"]);
  const peer = { namespaceSelector: { matchLabels: { gateway: "envoy" } } };
  t.same(find(gateway, "NetworkPolicy", "interlace-engines").spec.ingress[1], { from: [peer], ports: [{ port: 8080, protocol: "TCP" }] }, "the gateway's data plane reaches engine pods");
  t.same(find(gateway, "NetworkPolicy", "interlace-endpoint-pickers").spec.ingress[0], { from: [peer], ports: [{ port: 9002, protocol: "TCP" }] }, "and the endpoint pickers' ext_proc port");

  const withAuth = await render(["nats.tls.enabled=true", "nats.auth.secretName=nats-auth", "nats.tls.secretName=my-tls", "nats.replicas=1", "networkPolicy.appNamespaces={team-a,team-b}"]);
  const conf1: string = find(withAuth, "ConfigMap", "interlace-nats").data["nats.conf"];
  t.match(conf1, /include "\.\.\/nats-auth\/auth.conf"/, "JWT authentication from the auth Secret (a path relative to /etc/nats, as nats-server resolves includes)");
  t.notMatch(conf1, /cluster \{/, "a single node has no cluster block");
  t.notOk(find(withAuth, "Secret", "interlace-nats-tls"), "a provided TLS Secret is used as is");
  t.same(find(withAuth, "StatefulSet", "interlace-nats").spec.template.spec.volumes.find((v: { name: string }) => v.name === "tls").secret.secretName, "my-tls");
  for (const name of ["interlace-engines", "interlace-endpoint-pickers", "interlace-toolrunners"]) {
    t.same(withAuth.filter((m) => m.kind === "NetworkPolicy" && m.metadata.name === name).map((m) => m.metadata.namespace), ["team-a", "team-b"], `${name}: in every app namespace`);
  }
  t.same(find(withAuth, "NetworkPolicy", "interlace-engines").spec.ingress[0].from[1].namespaceSelector.matchLabels, { "kubernetes.io/metadata.name": "interlace-system" }, "engines in team-a let in the router from the release namespace");
  const noScraper = await render(["networkPolicy.prometheusPeers=null"]);
  t.same(find(noScraper, "NetworkPolicy", "interlace-nats").spec.ingress.map((r: { ports: { port: number }[] }) => r.ports[0]!.port), [4222, 6222], "no Prometheus peers: the monitor port is closed to every pod");
  t.notOk(find(noScraper, "NetworkPolicy", "interlace-toolrunners").spec.ingress, "and runners take no traffic at all");
  t.ok(find(withAuth, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.includes("--nats-auth-secret=nats-auth"), "a provided trust root is handed to the operator");
  const plain = await render(["nats.tls.enabled=false", "nats.auth.enabled=false", "router.apiKeys.generate=false", "nats.replicas=1", "networkPolicy.enabled=false"]);
  const op = find(plain, "Deployment", "interlace-operator").spec.template.spec.containers[0];
  t.ok(op.args.includes("--nats-url=nats://interlace-nats-0.interlace-nats-headless.interlace-system.svc:4222"), "laptop mode: one plain node");
  t.notOk(op.args.some((a: string) => /^--(nats-auth-secret|router-credentials-secret|nats-ca)=/.test(a)), "laptop mode: no credentials");
  t.notMatch(find(plain, "ConfigMap", "interlace-nats").data["nats.conf"], /include|tls \{/, "laptop mode: no auth, no TLS");
  const plainRouter = find(plain, "Deployment", "interlace-router").spec.template.spec;
  t.same(plainRouter.volumes.map((v: { name: string }) => v.name), ["tmp"], "laptop mode: the router mounts no Secret");
  t.notOk(find(plain, "Secret"), "laptop mode: no Secrets");
  t.notOk(find(plain, "NetworkPolicy"));
});

t.test("auth and TLS on by default: every pod that talks to NATS gets the CA and its own credentials", async (t) => {
  const ms = await render();
  const op = find(ms, "Deployment", "interlace-operator").spec.template.spec;
  const opc = op.containers[0];
  t.ok(opc.args.includes("--nats-auth-secret=interlace-nats-auth"), "the operator keeps the trust root (makes it when absent)");
  t.ok(opc.args.includes("--router-credentials-secret=interlace-router-credentials"), "the operator mints the router's credentials");
  t.ok(opc.args.includes("--nats-ca=/etc/interlace/nats-ca/ca.crt"), "the operator connects with TLS and hands the CA on to pool pods");
  t.same(op.volumes.find((v: { name: string }) => v.name === "nats-ca").secret, { secretName: "interlace-nats-tls", items: [{ key: "ca.crt", path: "ca.crt" }] }, "only the CA, never the server key");
  t.ok(opc.volumeMounts.some((m: { name: string; mountPath: string }) => m.name === "nats-ca" && m.mountPath === "/etc/interlace/nats-ca"));

  const router = find(ms, "Deployment", "interlace-router").spec.template.spec;
  const rc = router.containers[0];
  const env = Object.fromEntries(rc.env.map((e: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }) => [e.name, e.value ?? `${e.valueFrom?.secretKeyRef?.name}/${e.valueFrom?.secretKeyRef?.key}`]));
  t.equal(env["INTERLACE_NATS_CREDS"], "/var/run/interlace/credentials/nats.creds", "the router's own NATS identity");
  t.equal(env["INTERLACE_NATS_CA"], "/var/run/interlace/credentials/ca.crt", "the router gets the CA");
  t.equal(env["INTERLACE_OWNER_TAG_KEY_FILE"], "/var/run/interlace/credentials/owner-tag.key", "the router signs owner tags with its own key, read from a file");
  t.equal(env["INTERLACE_ENGINE_API_KEY_FILE"], "/var/run/interlace/credentials/engine-api.key", "the router's bearer token towards engines, read from a file");
  t.notOk(env["INTERLACE_INTERRUPT_KEY"] ?? env["INTERLACE_INTERRUPT_KEY_FILE"], "the router holds no interrupt key");
  t.notOk(rc.env.some((e: { valueFrom?: { secretKeyRef?: unknown } }) => e.valueFrom?.secretKeyRef !== undefined), "no key travels as an environment value");
  t.equal(env["INTERLACE_AUTH"], "required", "fail closed: a missing credential stops the router");
  t.equal(env["INTERLACE_NATS_REPLICAS"], "3", "the router's buckets at the cluster's replica count");
  t.equal(env["INTERLACE_API_KEYS_FILE"], "/etc/interlace/api-keys/api-keys", "clients need an API key");
  t.same(
    router.volumes.filter((v: { secret?: unknown }) => v.secret).map((v: { secret: { secretName: string } }) => v.secret.secretName),
    ["interlace-router-credentials", "interlace-router-api-keys"],
  );
  const keys = find(ms, "Secret", "interlace-router-api-keys");
  t.match(Buffer.from(keys.data["api-keys"], "base64").toString(), /^default:[A-Za-z0-9]{40}\n$/, "a generated API key for principal default");
  t.equal(keys.metadata.annotations["helm.sh/resource-policy"], "keep", "kept across upgrades and uninstall");
  t.ok(find(ms, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.some((a: string) => a.startsWith("--nats-url=tls://")), "TLS URLs");

  const given = await render(["router.apiKeys.secretName=my-keys"]);
  t.notOk(find(given, "Secret", "interlace-router-api-keys"), "a provided API key Secret is used as is");
  t.ok(find(given, "Deployment", "interlace-router").spec.template.spec.volumes.some((v: { secret?: { secretName: string } }) => v.secret?.secretName === "my-keys"));
  // TLS without auth: the router still gets the CA through its operator-written Secret.
  const tlsOnly = await render(["nats.auth.enabled=false", "router.apiKeys.generate=false"]);
  const tr = find(tlsOnly, "Deployment", "interlace-router").spec.template.spec.containers[0];
  t.same(tr.env.map((e: { name: string }) => e.name).sort(), ["INTERLACE_NATS_CA", "INTERLACE_NATS_REPLICAS", "POD_NAME"], "TLS only: the CA (and the replica count) and nothing else");
  t.notOk(find(tlsOnly, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.some((a: string) => a.startsWith("--nats-auth-secret")));
});

t.test("the ClusterRole grants exactly what the reconcilers need", async (t) => {
  const ms = await render();
  const role = find(ms, "ClusterRole", "interlace-operator");
  const grants = new Set<string>();
  for (const rule of role.rules) for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}`);
  const must = [
    "interlace.dev/enginepools:watch", "interlace.dev/toolpools:list", "interlace.dev/agentapps:patch",
    "interlace.dev/enginepools/status:patch", "interlace.dev/toolpools/finalizers:update",
    "apps/deployments:patch", "apps/deployments:create", "/services:watch", "/configmaps:patch",
    "policy/poddisruptionbudgets:patch", "/events:create", "coordination.k8s.io/leases:update", "/pods:watch",
  ];
  for (const g of must) t.ok(grants.has(g), `grants ${g}`);
  for (const g of [...grants]) {
    t.notOk(g.includes("*"), `no wildcard (${g})`);
    t.notMatch(g, /pods:(create|update|patch|delete)|nodes|clusterroles|customresourcedefinitions|secrets/, `nothing beyond its children and reading pods; Secrets are granted apart (${g})`);
  }
});

t.test("Secrets: the operator's own by name in the release namespace; the pools' get/create/patch, in the listed namespaces only when listed", async (t) => {
  const rulesOf = (m: any): string[] => m.rules.flatMap((r: any) => r.verbs.map((v: string) => `${r.resources.join(",")}:${v}${r.resourceNames ? `[${r.resourceNames.join(",")}]` : ""}`));
  const ms = await render();
  const own = find(ms, "Role", "interlace-operator-credentials");
  t.equal(own.metadata.namespace, NS);
  t.same(rulesOf(own).sort(), ["secrets:create", "secrets:get[interlace-nats-auth,interlace-router-credentials]", "secrets:patch[interlace-nats-auth,interlace-router-credentials]", "secrets:update[interlace-nats-auth,interlace-router-credentials]"], "its own Secrets by name; create (which RBAC cannot name) in its namespace");
  t.same(rulesOf(find(ms, "ClusterRole", "interlace-operator-secrets")).sort(), ["secrets:create", "secrets:get", "secrets:patch"], "no namespaces listed: the pools' Secrets anywhere, never list, watch, update or delete");
  t.same(find(ms, "ClusterRoleBinding", "interlace-operator-secrets").subjects, [{ kind: "ServiceAccount", name: "interlace", namespace: NS }]);
  const listed = await render(["rbac.secretNamespaces={team-a,team-b}", "nats.auth.secretName=provided"]);
  t.notOk(find(listed, "ClusterRole", "interlace-operator-secrets"), "namespaces listed: no cluster-wide Secret access");
  const roles = listed.filter((m) => m.kind === "Role" && m.metadata.name === "interlace-operator-secrets");
  t.same(roles.map((r) => r.metadata.namespace), ["team-a", "team-b"], "a Role in each listed namespace");
  for (const r of roles) t.same(rulesOf(r).sort(), ["secrets:create", "secrets:get", "secrets:patch"]);
  t.same(listed.filter((m) => m.kind === "RoleBinding" && m.metadata.name === "interlace-operator-secrets").map((b) => b.metadata.namespace), ["team-a", "team-b"]);
  t.match(rulesOf(find(listed, "Role", "interlace-operator-credentials")), ["secrets:get[provided,interlace-router-credentials]"], "a provided trust root is named instead");
  const noAuth = await render(["nats.auth.enabled=false", "nats.tls.enabled=false"]);
  t.notOk(find(noAuth, "Role", "interlace-operator-credentials"), "no NATS auth or TLS: no Secrets of its own");
});

t.test("helm template with non-default values", async (t) => {
  const ms = await render([
    "nats.enabled=false",
    "nats.externalUrl=nats://nats.infra.svc:4222",
    "serviceMonitor.enabled=true",
    "serviceMonitor.labels.release=prom",
    "operator.replicas=3",
    "operator.leaderElection.enabled=false",
    "dashboards.enabled=false",
    "image.tag=v9.9.9",
    "serviceAccount.name=custom-sa",
    "router.prefixWarm.sessions=0",
    "router.prefixWarm.windowMs=5000",
    "router.prefixWarm.minFreePercent=25",
    "router.appHomes=false",
  ]);
  t.notOk(find(ms, "StatefulSet"), "no NATS StatefulSet with an external URL");
  const dep = find(ms, "Deployment", "interlace-operator");
  t.equal(dep.spec.replicas, 3);
  const c = dep.spec.template.spec.containers[0];
  t.ok(c.args.includes("--nats-url=nats://nats.infra.svc:4222"), "external NATS URL passed on");
  t.ok(c.args.includes("--leader-elect=false"));
  t.equal(c.image, "ghcr.io/interlace-dev/interlace:v9.9.9");
  t.equal(dep.spec.template.spec.serviceAccountName, "custom-sa");
  const sm = find(ms, "ServiceMonitor");
  t.ok(sm, "ServiceMonitor rendered");
  t.equal(sm.metadata.labels.release, "prom");
  t.notOk(find(ms, "ConfigMap", "interlace-dashboard-interlace"), "dashboards off");
  const routerArgs: string[] = find(ms, "Deployment", "interlace-router").spec.template.spec.containers[0].args;
  t.same(routerArgs.filter((a) => a.startsWith("--prefix-warm-")), ["--prefix-warm-sessions=0", "--prefix-warm-window-ms=5000", "--prefix-warm-min-free=25"], "router.prefixWarm reaches the router (sessions 0: warming off)");
  t.ok(routerArgs.includes("--app-homes=off"), "router.appHomes=false reaches the router");
});

t.test("values.schema.json rejects bad values", async (t) => {
  const cases: [string, string[], RegExp][] = [
    ["zero operator replicas", ["operator.replicas=0"], /operator\/replicas|operator\.replicas/],
    ["external NATS without a URL", ["nats.enabled=false"], /externalUrl/],
    ["NATS URL with the wrong scheme", ["nats.enabled=false", "nats.externalUrl=http://nats:4222"], /externalUrl/],
    ["unknown pull policy", ["image.pullPolicy=Sometimes"], /pullPolicy/],
    ["misspelt top-level key", ["operater.replicas=2"], /operater/],
    ["root pods", ["podSecurityContext.runAsNonRoot=false"], /runAsNonRoot/],
    ["bad log level", ["operator.logLevel=loud"], /logLevel/],
    ["negative cold-start hold", ["router.coldStart.holdMs=-1"], /holdMs/],
    ["warming free share over 100%", ["router.prefixWarm.minFreePercent=150"], /minFreePercent/],
    ["app homes not a boolean", ["router.appHomes=sometimes"], /appHomes/],
  ];
  for (const [name, set, expect] of cases) {
    const args = ["template", "interlace", CHART];
    for (const s of set) args.push("--set", s);
    const r = await helm(args);
    t.not(r.code, 0, `${name}: rejected`);
    t.match(r.stderr, /values don't meet the specifications of the schema/, `${name}: by the schema`);
    t.match(r.stderr, expect, `${name}: names the field`);
  }
});

t.test("the dashboard only uses metrics the code exports", async (t) => {
  const dashboard = readFileSync(path.join(CHART, "dashboards/interlace.json"), "utf8");
  const used = new Set([...dashboard.matchAll(/interlace_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, "")));
  const sources: string[] = [];
  const walk = (dir: string): void => {
    for (const f of readdirSync(dir)) {
      const p = path.join(dir, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith(".ts")) sources.push(readFileSync(p, "utf8"));
    }
  };
  for (const d of ["engine-pod/src", "operator/src", "toolrunner/src", "router/src"]) if (existsSync(path.join(ROOT, d))) walk(path.join(ROOT, d));
  const code = sources.join("\n").replace(/\$\{PREFIX\}/g, "interlace_engine_");
  t.ok(used.size >= 10, `dashboard uses ${used.size} metrics`);
  // The engine's scrape-time gauges and counters are declared by a helper that adds the prefix to a bare name.
  const declared = (m: string): boolean => code.includes(m) || (m.startsWith("interlace_engine_") && code.includes(`"${m.slice("interlace_engine_".length)}"`));
  for (const m of used) t.ok(declared(m), `${m} is exported by engine, runner, router or operator`);
});

t.test("rendered manifests apply server-side to a real API server", async (t) => {
  const cp = await controlPlaneFor(t);
  const kc = cp.kubeConfig;
  t.equal((await kubeRequest(kc, "POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } })).status, 201);
  // The Prometheus Operator's CRD does not exist here: install a minimal one so the ServiceMonitor applies.
  await applyManifest(kc, minimalServiceMonitorCrd());
  const ms = await render(["serviceMonitor.enabled=true"], ["--include-crds"]);
  const crds = ms.filter((m) => m.kind === "CustomResourceDefinition");
  t.same(crds.map((c) => c.metadata.name).sort(), ["agentapps.interlace.dev", "enginepools.interlace.dev", "inferencepools.inference.networking.k8s.io", "toolpools.interlace.dev"], "the chart ships the three CRDs and InferencePool's");
  for (const m of crds) await applyManifest(kc, m);
  for (const name of [...crds.map((c) => c.metadata.name), "servicemonitors.monitoring.coreos.com"]) await waitCrdServing(kc, name);
  for (const m of ms.filter((m) => m.kind !== "CustomResourceDefinition")) {
    const res = await applyManifest(kc, m, { namespace: NS, allowError: true });
    t.ok(res.status < 300, `${m.kind}/${m.metadata.name} applied: ${res.status}`, { body: res.body });
  }
  const dep = (await kubeRequest(kc, "GET", `/apis/apps/v1/namespaces/${NS}/deployments/interlace-operator`)).body as any;
  t.equal(dep.spec.replicas, 2, "operator Deployment stored");
  const routerDep = (await kubeRequest(kc, "GET", `/apis/apps/v1/namespaces/${NS}/deployments/interlace-router`)).body as any;
  t.equal(routerDep.spec.replicas, 2, "router Deployment stored");

  // As the operator's ServiceAccount: exactly what the ClusterRole grants.
  const sa = await cp.kubeConfigFor(NS, "interlace");
  const can = async (verb: string, group: string, resource: string, namespace = "default", subresource = "", name = ""): Promise<boolean> => {
    const res = await kubeRequest(sa, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", spec: { resourceAttributes: { verb, group, resource, namespace, subresource, name } } },
    });
    return (res.body as { status?: { allowed?: boolean } }).status?.allowed === true;
  };
  t.ok(await can("watch", "interlace.dev", "enginepools"), "watch EnginePools in any namespace");
  t.ok(await can("patch", "interlace.dev", "agentapps", "team-a", "status"), "patch AgentApp status");
  t.ok(await can("patch", "apps", "deployments", "team-a"), "apply Deployments");
  t.ok(await can("create", "", "configmaps", "team-b"), "create ConfigMaps");
  t.ok(await can("update", "coordination.k8s.io", "leases", NS), "renew its Lease");
  t.ok(await can("create", "", "secrets", "team-a"), "writes pool credentials Secrets");
  t.notOk(await can("list", "", "secrets"), "cannot list Secrets");
  t.notOk(await can("delete", "", "secrets", "team-a"), "cannot delete Secrets");
  t.notOk(await can("update", "", "secrets", "team-a", "", "pool-engine-credentials"), "never updates a pool's Secret (server-side apply: patch)");
  t.ok(await can("update", "", "secrets", NS, "", "interlace-nats-auth"), "updates its trust root (keys added, rotated)");
  t.notOk(await can("update", "", "secrets", NS, "", "interlace-router-api-keys"), "updates no other Secret of the release namespace");
  t.notOk(await can("create", "", "pods"), "no Pods");
  t.ok(await can("list", "", "pods", "team-a"), "reads engine pods' model checks");
  t.notOk(await can("delete", "", "pods", "team-a"), "never deletes Pods");
  t.notOk(await can("delete", "interlace.dev", "enginepools"), "never deletes user resources");
  t.notOk(await can("create", "apiextensions.k8s.io", "customresourcedefinitions"), "no CRD writes");
  t.ok(await can("patch", "inference.networking.k8s.io", "inferencepools", "team-a"), "applies the InferencePools of exposed EnginePools");
  const list = await kubeRequest(sa, "GET", "/apis/interlace.dev/v1alpha1/enginepools");
  t.equal(list.status, 200, "the ServiceAccount token authenticates and lists EnginePools", { body: list.body });
});

function minimalServiceMonitorCrd(): Manifest {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "servicemonitors.monitoring.coreos.com" },
    spec: {
      group: "monitoring.coreos.com",
      scope: "Namespaced",
      names: { kind: "ServiceMonitor", listKind: "ServiceMonitorList", plural: "servicemonitors", singular: "servicemonitor" },
      versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } }],
    },
  };
}

t.test("nats-server starts with the chart's default config, laid out as the pod mounts it", async (t) => {
  // A config that renders can still be one nats-server refuses (an include path, a size unit):
  // run the real server on it, with the files where the StatefulSet mounts them under a scratch root.
  const ms = await render(["nats.replicas=1"]);
  const root = mkdtempSync(path.join(tmpdir(), "interlace-nats-conf-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = (d: string): string => {
    mkdirSync(path.join(root, d), { recursive: true });
    return path.join(root, d);
  };
  const conf: string = find(ms, "ConfigMap", "interlace-nats").data["nats.conf"];
  t.match(conf, /include "/, "authentication is on by default");
  t.match(conf, /tls \{/, "TLS is on by default");
  writeFileSync(
    path.join(dir("etc/nats"), "nats.conf"),
    conf.replaceAll("/etc/nats-tls/", `${dir("etc/nats-tls")}/`).replace("/data/jetstream", dir("data/jetstream")).replace(/^port: 4222$/m, "port: -1").replace(/^http_port: 8222$/m, "http_port: -1"),
  );
  const tls = find(ms, "Secret", "interlace-nats-tls");
  for (const k of ["tls.crt", "tls.key", "ca.crt"]) writeFileSync(path.join(root, "etc/nats-tls", k), Buffer.from(tls.data[k], "base64"));
  writeFileSync(path.join(dir("etc/nats-auth"), "auth.conf"), trustRootSecretData(await createTrustRoot())["auth.conf"]!);
  const check = await execFileP(natsServerBinary(), ["-t", "-c", path.join(root, "etc/nats/nats.conf")], { env: { ...process.env, POD_NAME: "interlace-nats-0" } }).then(
    (r) => ({ ok: true, out: r.stdout + r.stderr }),
    (err: { stdout?: string; stderr?: string; message: string }) => ({ ok: false, out: `${err.stderr ?? ""}${err.stdout ?? ""}${err.message}` }),
  );
  t.ok(check.ok, `nats-server accepts the rendered config: ${check.out}`);
});

t.test("networkPolicy.perPool: the operator renders a NetworkPolicy per pool, with the release as its peers, and may write them", async (t) => {
  const ms = await render(["networkPolicy.perPool=true"]);
  const args: string[] = find(ms, "Deployment", "interlace-operator").spec.template.spec.containers[0].args;
  t.ok(args.includes("--network-policy-release=interlace"), "the release name (its pods' instance label)");
  const rules = find(ms, "ClusterRole", "interlace-operator").rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  t.ok(rules.some((r) => r.apiGroups.includes("networking.k8s.io") && r.resources.includes("networkpolicies") && ["create", "patch", "watch"].every((v) => r.verbs.includes(v))), "NetworkPolicy write access");
  t.notOk(args.some((a) => a.startsWith("--network-policy-dns-peers")), "DNS: the operator's default (kube-dns pods)");
  const nodeLocal = await render(["networkPolicy.perPool=true", "networkPolicy.dnsPeers[0].ipBlock.cidr=169.254.20.10/32"]);
  t.ok(find(nodeLocal, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.includes('--network-policy-dns-peers=[{"ipBlock":{"cidr":"169.254.20.10/32"}}]'), "a DNS named in dnsPeers");
  const off = await render(["networkPolicy.perPool=true", "networkPolicy.enabled=false"]);
  t.notOk(find(off, "Deployment", "interlace-operator").spec.template.spec.containers[0].args.some((a: string) => a.startsWith("--network-policy-release")), "networkPolicy.enabled=false turns every policy off");
});

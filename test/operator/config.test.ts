import t from "tap";
import { mkdtemp, writeFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgv } from "../../common/src/index.js";
import { parseOperatorOptions, DEFAULT_IMAGE } from "../../operator/src/config.js";
import { deploymentAvailability, mergeConditions, rolloutConditions } from "../../operator/src/controllers/index.js";
import { kubeConfigFromAccess, loadKubeConfig } from "../../operator/src/runtime/index.js";

const src = (argv: string[], env: Record<string, string> = {}) => ({ flags: parseArgv(argv), env });

t.test("operator options: defaults, flags, env, and cross-field checks", async (t) => {
  const d = parseOperatorOptions(src([]));
  t.equal(d.image, DEFAULT_IMAGE);
  t.equal(d.leaderElect, false);
  t.equal(d.metricsPort, 8081);
  t.notOk(d.namespace, "all namespaces by default");
  t.notOk(d.natsUrl, "no cleanup without a NATS URL");
  const o = parseOperatorOptions(
    src(["--kubeconfig", "/k", "--namespace", "team", "--leader-elect", "--metrics-port", "0", "--image", "x/y:1"], { NATS_URL: "nats://n:4222", POD_NAMESPACE: "interlace" }),
  );
  t.match(o, { kubeconfig: "/k", namespace: "team", leaderElect: true, metricsPort: 0, image: "x/y:1", natsUrl: "nats://n:4222", leaseNamespace: "interlace" });
  t.equal(parseOperatorOptions(src(["--leader-elect=true"])).leaderElect, true, "the chart's --leader-elect=true form");
  t.throws(() => parseOperatorOptions(src(["--lease-duration-ms", "2000", "--renew-deadline-ms", "3000"])), /renew-deadline-ms must be shorter/);
  t.throws(() => parseOperatorOptions(src(["--image-pull-policy", "Sometimes"])), /image-pull-policy/);
  t.equal(d.keyGraceMs, 600_000, "a rotated app key's old value is accepted for 10 min by default");
  t.equal(parseOperatorOptions(src(["--key-grace-ms", "0"])).keyGraceMs, 0, "0: refused at once");
  t.throws(() => parseOperatorOptions(src(["--key-grace-ms", "-1"])), /key-grace-ms/);
  t.equal(d.wakeCheckMs, 1_000, "pools at zero are checked for waiting work every second between ticks");
  t.equal(parseOperatorOptions(src(["--wake-check-ms", "0"])).wakeCheckMs, 0, "0: only the tick wakes them");
  t.equal(parseOperatorOptions(src([], { WAKE_CHECK_MS: "250" })).wakeCheckMs, 250, "or from the environment");
  t.throws(() => parseOperatorOptions(src(["--wake-check-ms", "-5"])), /wake-check-ms/);
  t.equal(d.pressureCheckMs, 2_000, "apps with pools with replicas are checked for a scale-up every 2 s between ticks");
  t.equal(parseOperatorOptions(src(["--pressure-check-ms", "0"])).pressureCheckMs, 0, "0: only the tick scales up");
});

t.test("kubeconfig: --kubeconfig file (paths relative to it), $KUBECONFIG, context namespace", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "kc-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, "ca.crt"), "CA-PEM");
  const yaml = `
apiVersion: v1
kind: Config
current-context: a
clusters:
  - name: c1
    cluster: { server: "https://127.0.0.1:6443", certificate-authority: ca.crt }
users:
  - name: u1
    user: { token: tok }
contexts:
  - name: a
    context: { cluster: c1, user: u1, namespace: team }
`;
  const file = path.join(dir, "config");
  await writeFile(file, yaml);
  const a = loadKubeConfig(file, {});
  t.equal(a.getCurrentCluster()?.server, "https://127.0.0.1:6443");
  t.equal(a.getCurrentCluster()?.caFile, path.join(dir, "ca.crt"), "relative to the kubeconfig");
  t.equal(a.getCurrentUser()?.token, "tok");
  t.equal(a.getContextObject(a.getCurrentContext())?.namespace, "team");
  const saved = process.env["KUBECONFIG"];
  process.env["KUBECONFIG"] = file;
  t.teardown(() => {
    if (saved === undefined) delete process.env["KUBECONFIG"];
    else process.env["KUBECONFIG"] = saved;
  });
  t.equal(loadKubeConfig(undefined, {}).getCurrentUser()?.token, "tok", "$KUBECONFIG when no file and not in a cluster");
});

t.test("in-cluster when KUBERNETES_SERVICE_HOST is set; a server+CA+token record converts", async (t) => {
  const saved = { host: process.env["KUBERNETES_SERVICE_HOST"], port: process.env["KUBERNETES_SERVICE_PORT"] };
  t.teardown(() => {
    for (const [k, v] of [["KUBERNETES_SERVICE_HOST", saved.host], ["KUBERNETES_SERVICE_PORT", saved.port]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  process.env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  process.env["KUBERNETES_SERVICE_PORT"] = "443";
  const kc = loadKubeConfig(undefined, process.env);
  t.equal(kc.getCurrentCluster()?.server, "https://[fd00::1]:443");
  t.equal(kc.getCurrentUser()?.authProvider?.config?.tokenFile, "/var/run/secrets/kubernetes.io/serviceaccount/token", "the rotating token file");
  const rec = kubeConfigFromAccess({ server: "https://127.0.0.1:1", ca: Buffer.from("CA"), token: "t" });
  t.equal(rec.getCurrentCluster()?.caData, Buffer.from("CA").toString("base64"));
  t.equal(rec.getCurrentUser()?.token, "t");
});

t.test("conditions keep lastTransitionTime while their status holds", async (t) => {
  const t0 = new Date("2026-01-01T00:00:00Z");
  const t1 = new Date("2026-01-01T00:05:00Z");
  const first = mergeConditions(undefined, rolloutConditions({ desired: 2, replicas: 0, available: 0, complete: false }, "pods"), 1, t0);
  const same = mergeConditions(first, rolloutConditions({ desired: 2, replicas: 2, available: 1, complete: false }, "pods"), 1, t1);
  t.equal(same.find((c) => c.type === "Ready")?.lastTransitionTime, "2026-01-01T00:00:00Z", "still False: time kept");
  t.match(same.find((c) => c.type === "Ready"), { message: "1/2 pods available" }, "message updated");
  const flipped = mergeConditions(same, rolloutConditions({ desired: 2, replicas: 2, available: 2, complete: true }, "pods"), 2, t1);
  t.match(flipped.find((c) => c.type === "Ready"), { status: "True", lastTransitionTime: "2026-01-01T00:05:00Z", observedGeneration: 2 });
});

t.test("deployment availability needs the controller to have observed the latest generation", async (t) => {
  const dep = (gen: number, observed: number, available: number) => ({
    metadata: { generation: gen },
    spec: { replicas: 2, selector: {}, template: {} },
    status: { observedGeneration: observed, replicas: 2, updatedReplicas: 2, availableReplicas: available },
  });
  t.equal(deploymentAvailability(dep(3, 3, 2)).complete, true);
  t.equal(deploymentAvailability(dep(3, 2, 2)).complete, false, "stale status does not count");
  t.equal(deploymentAvailability(dep(3, 3, 1)).complete, false);
});

t.test("per-pool NetworkPolicy options: the release turns them on; DNS peers are a JSON array of peers", async (t) => {
  const off = parseOperatorOptions(src([]));
  t.equal(off.networkPolicyRelease, undefined, "off by default");
  const on = parseOperatorOptions(src(["--network-policy-release", "prod", "--network-policy-dns-peers", '[{"ipBlock":{"cidr":"169.254.20.10/32"}}]']));
  t.equal(on.networkPolicyRelease, "prod");
  t.same(on.networkPolicyDnsPeers, [{ ipBlock: { cidr: "169.254.20.10/32" } }]);
  t.throws(() => parseOperatorOptions(src(["--network-policy-dns-peers", "{"])), /not JSON/);
  t.throws(() => parseOperatorOptions(src(["--network-policy-dns-peers", "[]"])), /non-empty JSON array/);
  t.throws(() => parseOperatorOptions(src(["--network-policy-dns-peers", '[{"to":[]}]'])), /NetworkPolicy peers/, "an unknown field");
});

import t from "tap";
import { mkdtemp, writeFile, mkdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgv } from "../../common/src/index.js";
import { parseOperatorOptions, DEFAULT_IMAGE } from "../../operator/src/config.js";
import { deploymentAvailability, mergeConditions, rolloutConditions } from "../../operator/src/controllers/index.js";
import { loadClusterAccess, loadInCluster, parseKubeconfig } from "../../operator/src/runtime/index.js";

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
});

t.test("kubeconfig: token, certificate data, files relative to the kubeconfig, context selection", async (t) => {
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
  - name: c2
    cluster: { server: "https://10.0.0.1", insecure-skip-tls-verify: true }
users:
  - name: u1
    user: { token: tok }
  - name: u2
    user: { client-certificate-data: ${Buffer.from("CERT").toString("base64")}, client-key-data: ${Buffer.from("KEY").toString("base64")} }
  - name: u3
    user: { exec: { command: aws } }
contexts:
  - name: a
    context: { cluster: c1, user: u1, namespace: team }
  - name: b
    context: { cluster: c2, user: u2 }
  - name: e
    context: { cluster: c1, user: u3 }
`;
  const a = parseKubeconfig(yaml, dir);
  t.equal(a.server, "https://127.0.0.1:6443");
  t.equal(a.ca?.toString(), "CA-PEM");
  t.equal(a.token, "tok");
  t.equal(a.namespace, "team");
  const b = parseKubeconfig(yaml, dir, "b");
  t.equal(b.cert?.toString(), "CERT");
  t.equal(b.key?.toString(), "KEY");
  t.equal(b.insecureSkipTlsVerify, true);
  t.throws(() => parseKubeconfig(yaml, dir, "e"), /exec\/auth-provider plugin/);
  t.throws(() => parseKubeconfig(yaml, dir, "nope"), /context nope not found/);
  await writeFile(path.join(dir, "config"), yaml);
  t.equal(loadClusterAccess(undefined, { KUBECONFIG: path.join(dir, "config") }).token, "tok", "$KUBECONFIG");
});

t.test("in-cluster: service host, mounted CA and a token file that is re-read", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "sa-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "ca.crt"), "CA");
  await writeFile(path.join(dir, "token"), "t1");
  await writeFile(path.join(dir, "namespace"), "interlace\n");
  const a = loadInCluster({ KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" }, dir);
  t.equal(a.server, "https://10.96.0.1:443");
  t.equal(a.tokenFile, path.join(dir, "token"));
  t.equal(a.namespace, "interlace");
  t.equal(loadInCluster({ KUBERNETES_SERVICE_HOST: "fd00::1" }, dir).server, "https://[fd00::1]:443");
  t.throws(() => loadInCluster({}, dir), /not running in a cluster/);
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

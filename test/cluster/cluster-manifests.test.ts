/**
 * @module The real-cluster test's helper workloads (the model server and
 * the Envoy gateway), without a cluster: each is a hardened single-pod
 * Deployment with its Service on port 8080, in the app namespace; the
 * samples' EnginePools may reach the model server under per-pool policies.
 */
import t, { type Test } from "tap";
import { APP_NS, MODEL_SERVICE, clusterSamples, gatewayManifests, modelServerManifests } from "../../hack/cluster-interlace.js";

type Doc = { kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, any>; data?: Record<string, string> };

function check(t: Test, docs: Doc[], name: string): Record<string, any> {
  const deploy = docs.find((d) => d.kind === "Deployment")!;
  const svc = docs.find((d) => d.kind === "Service")!;
  t.equal(deploy.metadata.name, name);
  t.equal(deploy.metadata.namespace, APP_NS);
  const pod = deploy.spec!["template"].spec;
  t.equal(pod.automountServiceAccountToken, false, "no service-account token");
  t.match(pod.securityContext, { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
  const container = pod.containers[0];
  t.match(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } }, "a hardened container");
  t.same(svc.spec!["selector"], deploy.spec!["selector"].matchLabels, "the Service selects the pod");
  t.same(svc.spec!["ports"], [{ name: "http", port: 8080, targetPort: "http" }]);
  return pod;
}

t.test("the model server serves the host's GGUF read-only", async (t) => {
  const pod = check(t, modelServerManifests("interlace:dev", "/var/models/m.gguf", "m.gguf") as unknown as Doc[], "models");
  t.same(pod.volumes, [{ name: "models", hostPath: { path: "/var/models/m.gguf", type: "File" } }]);
  t.match(pod.containers[0].volumeMounts, [{ mountPath: "/models/m.gguf", readOnly: true }]);
});

t.test("the gateway runs Envoy on its bootstrap, with the picker as its ext_proc server", async (t) => {
  const docs = gatewayManifests("envoy:dev", { address: "10.0.0.7", port: 9002 }) as unknown as Doc[];
  const pod = check(t, docs, "gateway");
  const config = docs.find((d) => d.kind === "ConfigMap")!;
  t.match(config.data!["envoy.json"], /10\.0\.0\.7/, "the bootstrap names the picker's address");
  t.same(pod.volumes.map((v: { name: string }) => v.name), ["config", "tmp"]);
});

t.test("the samples' EnginePools get the model server's URL and declare it as egress (per-pool NetworkPolicies cut the rest)", async (t) => {
  const pools = clusterSamples("http://models.default.svc:8080/m.gguf", "ab".repeat(32)).filter((m) => m.kind === "EnginePool") as unknown as Doc[];
  t.ok(pools.length > 0, "the samples have an EnginePool");
  for (const p of pools) {
    t.match(p.spec!["model"], { url: "http://models.default.svc:8080/m.gguf" }, `${p.metadata.name}: the model server's URL`);
    t.match(p.spec!["egress"], [{ namespace: APP_NS, podLabels: { "app.kubernetes.io/name": MODEL_SERVICE }, ports: [{ port: 8080 }] }], `${p.metadata.name}: may reach the model server`);
  }
});

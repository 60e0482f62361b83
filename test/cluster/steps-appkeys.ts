/**
 * @module Cluster steps: API keys per app (AgentApp `spec.auth`) with the
 * chart as installed — the operator reading the Secrets under its
 * ClusterRole and publishing digests, the routers checking them. Two apps on
 * the samples' EnginePool, each naming its own Secret: no key gets 401,
 * the other app's key 403, the router's own key file (which serves apps
 * that name no Secret) 403, the app's key 200; a new value written into the
 * Secret works with no restart and the old one still works within the grace
 * window (the chart's default, 10 min) as the same key.
 */
import { randomBytes } from "node:crypto";
import type { Test } from "tap";
import type { Cluster } from "../../hack/cluster.js";
import { APP_NS } from "../../hack/cluster-interlace.js";
import { kubeRequest } from "../../hack/control-plane.js";

const key = (who: string): string => `${who}-${randomBytes(16).toString("hex")}`;
const b64 = (v: string): string => Buffer.from(v).toString("base64");

export async function appKeySteps(t: Test, cluster: Cluster, router: string, routerAuth: Record<string, string>, enginePool: string): Promise<void> {
  const kc = cluster.cp.kubeConfig;
  const keys = { a: key("alice"), b: key("bob") };
  const made: string[] = [];
  t.teardown(async () => {
    for (const path of made.reverse()) await kubeRequest(kc, "DELETE", path);
  });
  for (const [app, value] of [["keyed-a", keys.a], ["keyed-b", keys.b]] as const) {
    const secret = await kubeRequest(kc, "POST", `/api/v1/namespaces/${APP_NS}/secrets`, {
      body: { apiVersion: "v1", kind: "Secret", metadata: { name: `${app}-keys` }, data: { [app]: b64(`${value}\n`) } },
    });
    t.equal(secret.status, 201, `Secret ${app}-keys created`);
    made.push(`/api/v1/namespaces/${APP_NS}/secrets/${app}-keys`);
    const created = await kubeRequest(kc, "POST", `/apis/interlace.dev/v1alpha1/namespaces/${APP_NS}/agentapps`, {
      body: {
        apiVersion: "interlace.dev/v1alpha1",
        kind: "AgentApp",
        metadata: { name: app },
        spec: { enginePool: { name: enginePool }, systemPrompt: "You help.", maxTokens: 8, auth: { apiKeySecrets: [{ name: `${app}-keys` }] } },
      },
    });
    t.equal(created.status, 201, `AgentApp ${app} with spec.auth created`);
    made.push(`/apis/interlace.dev/v1alpha1/namespaces/${APP_NS}/agentapps/${app}`);
  }
  const status = async (app: string, headers: Record<string, string>): Promise<number> => {
    const res = await fetch(`${router}/v1/apps/${APP_NS}/${app}`, { headers, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return res.status;
  };
  const bearer = (k: string): Record<string, string> => ({ authorization: `Bearer ${k}` });
  const until = async (what: string, ok: () => Promise<boolean>, ms = 90_000): Promise<boolean> => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (await ok()) return true;
      await new Promise((r) => setTimeout(r, 1000));
    }
    t.comment(`timed out waiting for ${what}`);
    return false;
  };
  t.ok(await until("both apps served with their keys", async () => (await status("keyed-a", bearer(keys.a))) === 200 && (await status("keyed-b", bearer(keys.b))) === 200), "each app takes its own key: 200");
  t.equal(await status("keyed-a", {}), 401, "no key: 401");
  t.equal(await status("keyed-a", bearer(key("nobody"))), 401, "a key nobody knows: 401");
  t.equal(await status("keyed-a", bearer(keys.b)), 403, "the other app's key: 403");
  t.equal(await status("keyed-b", bearer(keys.a)), 403, "and the other way round: 403");
  t.equal(await status("keyed-a", routerAuth), 403, "the router's own key file (for apps that name no Secret): 403");

  // A new value under the same data key: no restart; the old value keeps working within the chart's grace window.
  const next = key("alice-next");
  const patched = await kubeRequest(kc, "PATCH", `/api/v1/namespaces/${APP_NS}/secrets/keyed-a-keys`, { body: { data: { "keyed-a": b64(next) } }, contentType: "application/merge-patch+json" });
  t.equal(patched.status, 200, "the key's value rotated in its Secret");
  t.ok(await until("the new value", async () => (await status("keyed-a", bearer(next))) === 200, 60_000), "the new value works without a restart");
  t.equal(await status("keyed-a", bearer(keys.a)), 200, "the old value still works within the grace window");
  t.equal(await status("keyed-b", bearer(next)), 403, "the new value is still only keyed-a's");
}

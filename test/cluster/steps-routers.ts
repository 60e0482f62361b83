/**
 * @module Cluster steps: the chart's two router replicas (values.yaml
 * `router.replicas: 2`), each reached on its own pod IP rather than through
 * the Service (which picks one). Both are Ready and see both engines of the
 * scaled pool; a session opened through one is read to its end through the
 * other; and one conversation's chat turns (`x-session-id`) land on the same
 * engine through either replica, which place it alike. Run on an app the
 * other steps do not use (`reports`), so its prefixes on the engines do not
 * change where their sessions go.
 */
import type { Test } from "tap";
import type { Cluster } from "../../hack/cluster.js";
import { APP_NS, RELEASE_NS, listPods } from "../../hack/cluster-interlace.js";

const ROUTER_PORT = 8080;

export async function routerReplicaSteps(cluster: Cluster, t: Test, auth: Record<string, string>, app: string): Promise<void> {
  const pods = (await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=router")).filter((p) => p.metadata.deletionTimestamp === undefined);
  t.equal(pods.length, 2, `the chart runs two router replicas: ${pods.map((p) => p.metadata.name).join(", ")}`);
  const bases = pods.map((p) => `http://${p.status.podIP}:${ROUTER_PORT}`);
  const json = { ...auth, "content-type": "application/json" };
  for (const [i, base] of bases.entries()) {
    const described = await fetch(`${base}/v1/apps/${APP_NS}/${app}`, { headers: auth, signal: AbortSignal.timeout(10_000) });
    t.equal(described.status, 200, `${pods[i]!.metadata.name} answers on its pod IP`);
    const { engines } = (await described.json()) as { engines: { ready: number } };
    t.equal(engines.ready, 2, `${pods[i]!.metadata.name} places on both engines`);
  }
  if (bases.length < 2) return;
  const [a, b] = [bases[0]!, bases[1]!];

  // A session opened through one replica, its events read through the other.
  const res = await fetch(`${a}/v1/apps/${APP_NS}/${app}/sessions`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ prompt: "Across the replicas.", policy: { type: "text", pieces: ["Across", " both."] } }),
  });
  t.equal(res.status, 201, "a session opened through the first replica");
  const opened = (await res.json()) as { id: string; eventsUrl: string; engine: string };
  const events = await (await fetch(`${b}${opened.eventsUrl}`, { headers: auth, signal: AbortSignal.timeout(120_000) })).text();
  t.match(events, /event: done\n(?:id: \d+\n)?data: \{[^\n]*"reason":"eos"/, "its events read to done through the second replica", { events: events.slice(-1500) });

  // One conversation's turns, alternating replicas: the same engine every time.
  const served: string[] = [];
  for (let turn = 0; turn < 4; turn++) {
    const chat = await fetch(`${[a, b][turn % 2]!}/v1/apps/${APP_NS}/${app}/chat/completions`, {
      method: "POST",
      headers: { ...json, "x-session-id": "cluster-conversation" },
      body: JSON.stringify({ messages: [{ role: "user", content: `Turn ${turn}.` }], max_tokens: 2 }),
      signal: AbortSignal.timeout(120_000),
    });
    t.equal(chat.status, 200, `turn ${turn} answered`);
    await chat.arrayBuffer();
    served.push(chat.headers.get("x-interlace-engine") ?? "");
  }
  t.equal(new Set(served).size, 1, `one conversation stays on one engine through both replicas: ${served.join(", ")}`);
}

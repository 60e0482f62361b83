/**
 * @module Cluster steps: one node of the chart's three-node JetStream
 * cluster (values.yaml `nats.replicas: 3`, streams and buckets at R3) killed
 * under load, the last row of the security issue's attack table. Sessions
 * with tool calls in flight through the router keep going: each call's
 * result reaches its session exactly once, every session ends by EOS, and a
 * session opened while the node is down is placed and served. The killed
 * node's StatefulSet pod comes back and rejoins.
 */
import type { Test } from "tap";
import type { Cluster } from "../../hack/cluster.js";
import { APP_NS, RELEASE_NS, listPods, waitReady } from "../../hack/cluster-interlace.js";
import { readEventStream } from "../../common/src/session-client.js";

// Sessions already in flight when the node dies; the pool's other sequences may be held by earlier steps' sessions, so a full pool is retried.
const SESSIONS = 3;
/** How long a client retries a 429/503 after its Retry-After, as a real client would. */
const PATIENCE_MS = 90_000;

interface Run {
  engine: string;
  events: Record<string, unknown>[];
  done: Promise<void>;
  firstCall: Promise<void>;
}

/** Opens a session with two tool calls (retrying a full pool as a client would) and reads its events in the background. */
async function startSession(router: string, auth: Record<string, string>, app: string, tag: string): Promise<Run> {
  const until = Date.now() + PATIENCE_MS;
  let res = await postSession(router, auth, app, tag);
  while ((res.status === 429 || res.status === 503) && Date.now() < until) {
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 1000 * Math.max(1, Number(res.headers.get("retry-after") ?? "1"))));
    res = await postSession(router, auth, app, tag);
  }
  if (res.status !== 201) throw new Error(`POST sessions (${tag}): ${res.status} ${await res.text()}`);
  return follow(router, auth, (await res.json()) as { engine: string; eventsUrl: string });
}

/** Opens a session with two tool calls: a 4 s sleep and an echo that names it. */
function postSession(router: string, auth: Record<string, string>, app: string, tag: string): Promise<Response> {
  return fetch(`${router}/v1/apps/${APP_NS}/${app}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: JSON.stringify({
      prompt: `Tool calls across a NATS node loss (${tag}).`,
      policy: {
        type: "lpt-dag",
        calls: [
          { id: "slow", tool: "sleep", arguments: { ms: 4000 } },
          { id: "echo", tool: "echo", arguments: { text: `kept-${tag}` } },
        ],
        finalText: " done",
      },
    }),
    signal: AbortSignal.timeout(60_000),
  });
}

/** Reads the session's events to the end in the background. */
async function follow(router: string, auth: Record<string, string>, opened: { engine: string; eventsUrl: string }): Promise<Run> {
  const stream = await fetch(`${router}${opened.eventsUrl}`, { headers: auth, signal: AbortSignal.timeout(180_000) });
  if (stream.body === null) throw new Error("no event stream");
  const body = stream.body;
  const events: Record<string, unknown>[] = [];
  let calledResolve: () => void = () => undefined;
  const firstCall = new Promise<void>((resolve) => (calledResolve = resolve));
  const done = (async () => {
    for await (const e of readEventStream<Record<string, unknown>>(body)) {
      events.push(e);
      if (e["type"] === "call") calledResolve();
    }
    calledResolve();
  })();
  return { engine: opened.engine, events, done, firstCall };
}

function check(t: Test, run: Run, tag: string): void {
  const last = run.events.at(-1) ?? {};
  t.same({ type: last["type"], reason: last["reason"] }, { type: "done", reason: "eos" }, `${tag}: the session finished (${JSON.stringify(last).slice(0, 300)})`);
  for (const id of ["slow", "echo"]) {
    const results = run.events.filter((e) => e["type"] === "interrupt" && e["id"] === id);
    t.equal(results.length, 1, `${tag}: call ${id}'s result arrived exactly once`, { events: run.events.map((e) => `${String(e["type"])}:${String(e["id"] ?? "")}`) });
  }
  t.ok(JSON.stringify(run.events).includes(`kept-${tag}`), `${tag}: the echo result is the runner's`);
}

export async function natsNodeLossSteps(t: Test, cluster: Cluster, options: { router: string; auth: Record<string, string>; app: string }): Promise<void> {
  const nats = (await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=nats")).map((p) => p.metadata.name).sort();
  t.equal(nats.length, 3, `the chart runs a three-node JetStream cluster: ${nats.join(", ")}`);
  const runs: Run[] = [];
  for (let i = 0; i < SESSIONS; i++) runs.push(await startSession(options.router, options.auth, options.app, `before-${i}`));
  await Promise.all(runs.map((r) => r.firstCall));
  // Hard kill, no grace: the node drops out of the cluster mid-load, as a lost machine would.
  const victim = nats[0]!;
  await cluster.kubectl(["delete", "pod", "-n", RELEASE_NS, "--grace-period=0", "--force", "--wait=false", victim]);
  t.comment(`killed NATS node ${victim} with ${SESSIONS} sessions' calls in flight`);
  const during = await startSession(options.router, options.auth, options.app, "during");
  await Promise.all([...runs, during].map((r) => r.done));
  runs.forEach((r, i) => check(t, r, `before-${i}`));
  check(t, during, "during");
  t.comment(`session times around the node loss (e2e ms): ${[...runs, during].map((r) => Math.round(Number((r.events.at(-1)?.["timings"] as { e2eMs?: number } | undefined)?.e2eMs ?? NaN))).join(", ")}`);
  await waitReady(cluster, [RELEASE_NS], 300_000);
  const back = (await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=nats")).filter((p) => p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
  t.equal(back.length, 3, "the StatefulSet brought the node back, Ready");
  const after = await startSession(options.router, options.auth, options.app, "after");
  await after.done;
  check(t, after, "after");
}

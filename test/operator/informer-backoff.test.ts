/**
 * The informer's retry pacing around client-node's ListWatch, with the delay
 * injected and the list and watch transport scripted: failed lists back off
 * exponentially (capped), a 410 relists at once without backing off, a
 * bookmark advances the resume point, the backoff resets after a watch that
 * worked, and watches that end at once empty are paced. The list/watch
 * behaviour itself is tested against a real API server in runtime.test.ts.
 */
import t from "tap";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { CoreTypes, Informer, KubeApiError, type KubeClient, type WatchFn } from "../../operator/src/runtime/index.js";
import { testLogger } from "./helpers.js";

type Params = Record<string, string | number | boolean | undefined>;
type Emit = (type: string, obj: unknown) => void;
/** One scripted watch: emits events, then ends (resolve) or fails (throw). */
type WatchStep = (params: Params, emit: Emit) => Promise<void>;

const httpError = (status: number): Error => Object.assign(new Error(`HTTP ${status}`), { statusCode: status });

/** A list function and a watch transport that follow scripts, one step per call. */
function scripted(lists: (() => Promise<void>)[], watches: WatchStep[]) {
  let listCalls = 0;
  let watchCalls = 0;
  const client: Pick<KubeClient, "list" | "kubeConfig"> = {
    kubeConfig: new KubeConfig(),
    list: async <T extends KubernetesObject>() => {
      const step = lists[listCalls++];
      if (step) await step();
      return { items: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns", resourceVersion: "10" } }] as unknown as T[], resourceVersion: "10" };
    },
  };
  const watch: WatchFn = async (_path, params, callback, done) => {
    const ac = new AbortController();
    const step = watches[watchCalls++];
    // Like the library's Watch: events and the end arrive after the call returns.
    setImmediate(() => {
      if (!step) {
        // Past the script: stay open until stopped.
        ac.signal.addEventListener("abort", () => done(new Error("aborted")));
        return;
      }
      step(params, (type, object) => callback(type, object)).then(
        () => done(null),
        (err: unknown) => done(err),
      );
    });
    return ac;
  };
  return { client, watch, calls: () => ({ lists: listCalls, watches: watchCalls }) };
}

const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

t.test("failed lists back off exponentially up to the cap", async (t) => {
  const delays: number[] = [];
  const fail = async (): Promise<void> => {
    throw new KubeApiError(500, "InternalError", "HTTP 500");
  };
  const { client, watch } = scripted([fail, fail, fail, fail], []);
  const inf = new Informer({ client, watch, type: CoreTypes.ConfigMap, log: testLogger("inf"), backoffBaseMs: 100, backoffMaxMs: 500, delay: async (ms) => void delays.push(ms) });
  inf.start();
  await inf.waitForSync();
  await inf.stop();
  t.same(delays, [100, 200, 400, 500]);
  t.equal(inf.get("ns", "a")?.metadata?.resourceVersion, "10");
});

t.test("410 relists at once; a bookmark advances the resume point; a watch that worked resets the backoff", async (t) => {
  const delays: number[] = [];
  const seen: Params[] = [];
  const { client, watch, calls } = scripted(
    [],
    [
      // In-band expiry: an ERROR event with a 410 Status, then the stream ends.
      async (p, emit) => {
        seen.push(p);
        emit("ERROR", { code: 410, reason: "Expired" });
      },
      // HTTP-level expiry.
      async (p) => {
        seen.push(p);
        throw httpError(410);
      },
      // A bookmark moves the resume point; the stream then ends cleanly.
      async (p, emit) => {
        seen.push(p);
        emit("BOOKMARK", { apiVersion: "v1", kind: "ConfigMap", metadata: { resourceVersion: "42" } });
      },
      async (p) => {
        seen.push(p);
        throw httpError(500);
      },
    ],
  );
  const inf = new Informer({ client, watch, type: CoreTypes.ConfigMap, log: testLogger("inf"), backoffBaseMs: 100, delay: async (ms) => void delays.push(ms) });
  inf.start();
  await inf.waitForSync();
  await until(() => calls().watches >= 5);
  await inf.stop();
  t.equal(calls().lists, 3, "the first list and one relist per 410");
  t.same(
    seen.map((p) => p["resourceVersion"]),
    ["10", "10", "10", "42"],
    "each relist restarts from the list's version; a bookmark advances it",
  );
  t.ok(seen.every((p) => p["allowWatchBookmarks"] === true && typeof p["timeoutSeconds"] === "number"), "bookmarks and a server timeout requested");
  t.same(delays, [100], "only the 500 backed off");
  t.equal(inf.latestResourceVersion(), "42");
});

t.test("watches that end at once with nothing in them are paced, not spun", async (t) => {
  const delays: number[] = [];
  const empty = async (): Promise<void> => {};
  const { client, watch, calls } = scripted([], [empty, empty, empty]);
  const inf = new Informer({ client, watch, type: CoreTypes.ConfigMap, log: testLogger("inf"), backoffBaseMs: 100, delay: async (ms) => void delays.push(ms) });
  inf.start();
  await until(() => calls().watches >= 4);
  await inf.stop();
  t.same(delays, [100, 200, 400]);
  t.equal(calls().lists, 1, "no relist: the resume point is still valid");
});

t.test("a stop that lands while the list is in flight opens no watch", async (t) => {
  let releaseList: () => void = () => {};
  const listGate = new Promise<void>((resolve) => (releaseList = resolve));
  const { client, watch, calls } = scripted([() => listGate], []);
  const inf = new Informer({ client, watch, type: CoreTypes.ConfigMap, log: testLogger("inf") });
  inf.start();
  await until(() => calls().lists === 1);
  const stopped = inf.stop();
  releaseList();
  await stopped;
  await new Promise((r) => setTimeout(r, 20));
  t.equal(calls().watches, 0, "no watch left open after stop");
});

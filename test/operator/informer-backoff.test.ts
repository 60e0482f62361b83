/**
 * The informer's retry pacing, with the delay injected: failed lists back off
 * exponentially (capped), a 410 relists at once without backing off, and the
 * backoff resets after a watch that worked. The list/watch behaviour itself is
 * tested against a real API server in runtime.test.ts.
 */
import t from "tap";
import type { KubernetesObject } from "@kubernetes/client-node";
import { CoreTypes, Informer, KubeApiError, type KubeClient, type WatchEvent, type WatchOptions } from "../../operator/src/runtime/index.js";
import { testLogger } from "./helpers.js";

type Script = (() => Promise<void>)[];

/** A list/watch source that follows a script of outcomes, one per call. */
function scriptedClient(lists: Script, watches: ((opts: WatchOptions, emit: (ev: WatchEvent) => void) => Promise<void>)[]) {
  let listCalls = 0;
  let watchCalls = 0;
  const client: Pick<KubeClient, "list" | "watch"> = {
    list: async <T extends KubernetesObject>() => {
      const step = lists[listCalls++];
      if (step) await step();
      return { items: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns", resourceVersion: "10" } }] as unknown as T[], resourceVersion: "10" };
    },
    watch: async (_type, _ns, opts, onEvent) => {
      const step = watches[watchCalls++];
      if (step) return step(opts, onEvent);
      // Past the script: block until stopped.
      await new Promise<void>((resolve) => {
        if (opts.signal?.aborted) resolve();
        else opts.signal?.addEventListener("abort", () => resolve());
      });
    },
  };
  return { client, calls: () => ({ lists: listCalls, watches: watchCalls }) };
}

const fail = (status: number) => async (): Promise<void> => {
  throw new KubeApiError(status, "InternalError", `HTTP ${status}`);
};

t.test("failed lists back off exponentially up to the cap", async (t) => {
  const delays: number[] = [];
  const { client } = scriptedClient([fail(500), fail(500), fail(500), fail(500)], []);
  const inf = new Informer({
    client,
    type: CoreTypes.ConfigMap,
    log: testLogger("inf"),
    backoffBaseMs: 100,
    backoffMaxMs: 500,
    delay: async (ms) => {
      delays.push(ms);
    },
  });
  inf.start();
  await inf.waitForSync();
  await inf.stop();
  t.same(delays, [100, 200, 400, 500]);
  t.equal(inf.get("ns", "a")?.metadata?.resourceVersion, "10");
});

t.test("410 relists at once; a watch that worked resets the backoff", async (t) => {
  const delays: number[] = [];
  const seenVersions: (string | undefined)[] = [];
  const { client, calls } = scriptedClient(
    [],
    [
      // In-band expiry: an ERROR event with a 410 Status, then the stream ends.
      async (opts, emit) => {
        seenVersions.push(opts.resourceVersion);
        emit({ type: "ERROR", object: { code: 410, reason: "Expired" } as WatchEvent["object"] });
      },
      // HTTP-level expiry.
      async (opts) => {
        seenVersions.push(opts.resourceVersion);
        throw new KubeApiError(410, "Expired", "too old");
      },
      // A bookmark moves the resume point; the stream then ends cleanly.
      async (opts, emit) => {
        seenVersions.push(opts.resourceVersion);
        t.equal(opts.allowWatchBookmarks, true, "bookmarks requested");
        emit({ type: "BOOKMARK", object: { apiVersion: "v1", kind: "ConfigMap", metadata: { resourceVersion: "42" } } });
      },
      async (opts) => {
        seenVersions.push(opts.resourceVersion);
        throw new KubeApiError(500, "InternalError", "boom");
      },
    ],
  );
  const inf = new Informer({ client, type: CoreTypes.ConfigMap, log: testLogger("inf"), backoffBaseMs: 100, delay: async (ms) => void delays.push(ms) });
  inf.start();
  await inf.waitForSync();
  while (calls().watches < 5) await new Promise((r) => setImmediate(r));
  await inf.stop();
  t.equal(calls().lists, 3, "the first list and one relist per 410");
  t.same(seenVersions, ["10", "10", "10", "42"], "each relist restarts from the list's version; a bookmark advances it");
  t.same(delays, [100], "only the 500 backed off");
});

t.test("watches that end at once with nothing in them are paced, not spun", async (t) => {
  const delays: number[] = [];
  const empty = async (): Promise<void> => {};
  const { client, calls } = scriptedClient([], [empty, empty, empty]);
  const inf = new Informer({ client, type: CoreTypes.ConfigMap, log: testLogger("inf"), backoffBaseMs: 100, delay: async (ms) => void delays.push(ms) });
  inf.start();
  while (calls().watches < 4) await new Promise((r) => setImmediate(r));
  await inf.stop();
  t.same(delays, [100, 200, 400]);
  t.equal(calls().lists, 1, "no relist: the resume point is still valid");
});

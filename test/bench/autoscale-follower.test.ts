import t from "tap";
import { followerBound, type FollowerSetup } from "../../bench/autoscale/follower-bound.js";
import type { TaskResult } from "../../bench/autoscale/task-client.js";

const setup: FollowerSetup = { endMs: 20_000, calls: 3, toolMs: 2000, sequencesPerEngine: 4, runnerConcurrency: 1, engines: { minReplicas: 1, maxReplicas: 2 }, runners: { minReplicas: 1, maxReplicas: 4 } };

/** A completed task holding its sequence from `from` to `to`, ms. */
function task(from: number, to: number, openMs = 0): TaskResult {
  const parts = { openMs, ttftMs: 0, decodeMs: 0, prefillMs: 0, toolMs: 0, restMs: 0, decodedTokens: 0 };
  return { atMs: from - openMs, ok: true, taskMs: to - from + openMs, retries: 0, parts };
}

t.test("one task in the first slice, nothing in the second: the minimum holds the rest", async (t) => {
  // 1 sequence of 4 at 80%: 1 engine; 6 s of tool work in 10 s is 0.6 slots, at 75%: 1 runner. The idle slice keeps the minimum.
  t.same(followerBound([task(0, 10_000)], setup), { engineSeconds: 20, runnerSeconds: 20 });
  const toZero = { ...setup, engines: { minReplicas: 0, maxReplicas: 2 }, runners: { minReplicas: 0, maxReplicas: 4 } };
  t.same(followerBound([task(0, 10_000)], toZero), { engineSeconds: 10, runnerSeconds: 10 }, "with minimum 0 the idle slice costs nothing");
});

t.test("a burst: each side sized to the slice's work at its target, capped at the maximum", async (t) => {
  const burst = Array.from({ length: 8 }, () => task(0, 10_000));
  // 8 sequences / 4 / 0.8 = 2.5: 3 engines, capped at 2; 48 s of tool work in 10 s = 4.8 slots / 0.75 = 6.4: 7 runners, capped at 4.
  t.same(followerBound(burst, setup), { engineSeconds: 2 * 10 + 10, runnerSeconds: 4 * 10 + 10 });
  const wide = { ...setup, engines: { minReplicas: 1, maxReplicas: 8 }, runners: { minReplicas: 1, maxReplicas: 16 } };
  t.same(followerBound(burst, wide), { engineSeconds: 3 * 10 + 10, runnerSeconds: 7 * 10 + 10 });
});

t.test("a load of exactly n replicas at the target asks for n, not n + 1", async (t) => {
  // 5 tasks over the whole slice: 30 s of tool work in 10 s = 3 slots = 4 runners at 75% exactly; 16 sequences... 5 / 4 / 0.8 = 1.5625: 2 engines.
  const five = Array.from({ length: 5 }, () => task(0, 10_000));
  const b = followerBound(five, { ...setup, endMs: 10_000, runners: { minReplicas: 1, maxReplicas: 10 } });
  t.equal(b.runnerSeconds, 40);
  t.equal(b.engineSeconds, 20);
});

t.test("a task's work is spread over its span across slices; its wait to open holds no sequence", async (t) => {
  // Held 5 s..15 s: half its 6 s of tool work in each slice (0.3 slots: 1 runner each).
  t.same(followerBound([task(5000, 15_000)], { ...setup, runners: { minReplicas: 0, maxReplicas: 4 }, engines: { minReplicas: 0, maxReplicas: 2 } }), { engineSeconds: 20, runnerSeconds: 20 });
  // Arrived at 0, waited 10 s to open, held 10 s..20 s: nothing in the first slice.
  const waited = followerBound([task(10_000, 20_000, 10_000)], { ...setup, runners: { minReplicas: 0, maxReplicas: 4 }, engines: { minReplicas: 0, maxReplicas: 2 } });
  t.same(waited, { engineSeconds: 10, runnerSeconds: 10 });
});

t.test("failed tasks are left out; a partial last slice counts its own length", async (t) => {
  const failed: TaskResult = { atMs: 0, ok: false, retries: 3, error: "503" };
  const eight = Array.from({ length: 8 }, () => task(0, 10_000));
  t.same(followerBound([failed], { ...setup, endMs: 15_000 }), { engineSeconds: 15, runnerSeconds: 15 });
  t.same(followerBound(eight, { ...setup, endMs: 15_000 }), { engineSeconds: 25, runnerSeconds: 45 }, "2 and 4 for 10 s, then 1 and 1 for 5 s");
});

t.test("held through a scale-down window: each slice keeps the most asked for by the slices started within it", async (t) => {
  // 8 tasks in the first slice only, then four idle slices; engines 1..2, runners 1..4.
  const burst = Array.from({ length: 8 }, () => task(0, 10_000));
  const o = { ...setup, endMs: 50_000 };
  t.same(followerBound(burst, o), { engineSeconds: 20 + 40, runnerSeconds: 40 + 40 }, "no hold: back to 1 and 1 at once");
  // A 20 s window: the slices starting at 10 s (0 started less than 20 s before) keep 2 and 4; the one at 20 s does not (0 is 20 s back).
  t.same(followerBound(burst, { ...o, holdMs: 20_000 }), { engineSeconds: 2 * 20 + 30, runnerSeconds: 4 * 20 + 30 });
  t.same(followerBound(burst, { ...o, holdMs: 30_000 }), { engineSeconds: 2 * 30 + 20, runnerSeconds: 4 * 30 + 20 });
  // The hold never lowers a slice below its own demand, and never raises the idle start of a trace.
  const late = Array.from({ length: 8 }, () => task(40_000, 50_000));
  t.same(followerBound(late, { ...o, holdMs: 30_000 }), followerBound(late, o), "a burst at the end: nothing after it to hold");
});

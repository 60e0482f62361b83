/**
 * The placement bench's workload: seeded Poisson arrivals over the apps, and
 * the two no-gain cases (`--apps 1`, `--distinct`) on the same arrival times.
 */
import t from "tap";
import { arrivals, benchApps } from "../../bench/placement/workload.js";

const base = { apps: 6, promptTokens: 64, rate: 0.5, durationS: 120, seed: 3, calls: 2, toolMs: 10 };

t.test("the same seed gives the same arrivals, spread over the apps", async (t) => {
  const a = arrivals(base);
  t.same(arrivals(base), a);
  t.ok(a.length > 20, "a Poisson process at 0.5/s for 120 s");
  const apps = new Set(a.map((x) => x.app));
  t.ok(apps.size > 1 && [...apps].every((x) => x >= 0 && x < 6), "apps drawn from the six");
});

t.test("--distinct keeps the arrival times and gives every session an app of its own", async (t) => {
  const shared = arrivals(base);
  const distinct = arrivals({ ...base, distinct: true });
  t.same(distinct.map((x) => x.at), shared.map((x) => x.at), "same Poisson times");
  t.same(distinct.map((x) => x.app), distinct.map((_, i) => i), "session n uses app n");
  const prompts = benchApps({ ...base, apps: distinct.length }, 0).map((a) => a.systemPrompt);
  t.equal(new Set(prompts).size, distinct.length, "no two sessions share a system prompt");
});

t.test("one app: every session shares one prompt", async (t) => {
  t.ok(arrivals({ ...base, apps: 1 }).every((x) => x.app === 0));
});

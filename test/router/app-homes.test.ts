/**
 * @module Apps' home engines: an even spread of the active apps over the
 * engines (each on the first engine of its ring walk with room), the same
 * whatever order a replica saw the apps in, kept only while an app is
 * active, and every arrival announced to the other replicas once.
 */
import t from "tap";
import { AppHomes, assignHomes } from "../../router/src/app-homes.js";
import { HashRing } from "../../router/src/consistent-hash.js";

const pool = { namespace: "ns", name: "engines" };

t.test("apps spread evenly: at most ceil(apps / engines) an engine, each on its ring's first engine with room", async (t) => {
  for (const [apps, pods] of [[6, 2], [7, 3], [5, 5], [12, 4], [3, 4]] as const) {
    const keys = Array.from({ length: apps }, (_, i) => `app-${apps}-${i}`);
    const names = Array.from({ length: pods }, (_, i) => `e${i}`);
    const homes = assignHomes(keys, names);
    t.equal(homes.size, apps);
    const per = new Map<string, number>();
    for (const pod of homes.values()) per.set(pod, (per.get(pod) ?? 0) + 1);
    t.ok([...per.values()].every((n) => n <= Math.ceil(apps / pods)), `${apps} apps on ${pods} engines: ${JSON.stringify([...per])}`);
    // Each app is on its first choice unless the engines before it on its walk were full when its turn came.
    const ring = new HashRing(names);
    const count = new Map<string, number>();
    for (const key of [...keys].sort()) {
      const expected = ring.walk(key).find((p) => (count.get(p) ?? 0) < Math.ceil(apps / pods))!;
      count.set(expected, (count.get(expected) ?? 0) + 1);
      t.equal(homes.get(key), expected);
    }
  }
  t.same(assignHomes(["a"], []), new Map(), "no engine: no home");
});

t.test("every replica assigns the same homes whatever order it saw the apps and engines in", async (t) => {
  const keys = ["k1", "k2", "k3", "k4", "k5", "k6"];
  const a = assignHomes(keys, ["e0", "e1"]);
  const b = assignHomes([...keys].reverse(), ["e1", "e0"]);
  t.same([...a].sort(), [...b].sort());
});

t.test("an app holds a home only while a session of it was placed within the window", async (t) => {
  let now = 1_000_000;
  const homes = new AppHomes(60_000, () => now);
  t.equal(homes.homeOf(pool, "k1", ["e0", "e1"]), undefined, "never seen");
  homes.observe(pool, "k1");
  homes.observeRemote(pool, "k2");
  const first = homes.homeOf(pool, "k1", ["e0", "e1"]);
  t.ok(first === "e0" || first === "e1");
  t.not(homes.homeOf(pool, "k2", ["e0", "e1"]), first, "two apps, two engines: one each");
  t.equal(homes.homeOf({ namespace: "ns", name: "other" }, "k1", ["e0", "e1"]), undefined, "homes are per pool");
  now += 61_000;
  t.equal(homes.homeOf(pool, "k1", ["e0", "e1"]), undefined, "no session for longer than the window");
});

t.test("each arrival this replica observes is announced once; the others' are not announced again", async (t) => {
  const published: string[] = [];
  const homes = new AppHomes();
  homes.shareArrivals({ publish: (p, key) => published.push(`${p.namespace}/${p.name} ${key}`) });
  homes.observe(pool, "k1");
  homes.observeRemote(pool, "k2");
  t.same(published, ["ns/engines k1"]);
  t.ok(homes.homeOf(pool, "k2", ["e0"]) === "e0", "a remote arrival makes the app active here");
});

/**
 * @module Apps' home engines: an even spread of the active apps over the
 * engines (each on the first engine of its ring walk with room, in the order
 * the apps became active), kept by an app as later apps arrive, the same
 * however a replica's arrivals were batched and whatever order it lists the
 * engines in, kept only while an app is active, and every arrival announced
 * to the other replicas once.
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
    // Each app is on its first choice unless the engines before it on its walk held their share of the apps before it.
    const ring = new HashRing(names);
    const count = new Map<string, number>();
    keys.forEach((key, k) => {
      const expected = ring.walk(key).find((p) => (count.get(p) ?? 0) < Math.ceil((k + 1) / pods))!;
      count.set(expected, (count.get(expected) ?? 0) + 1);
      t.equal(homes.get(key), expected);
    });
  }
  t.same(assignHomes(["a"], []), new Map(), "no engine: no home");
});

t.test("an app keeps its home as later apps arrive, however the arrivals were batched and whatever order the engines are listed in", async (t) => {
  /** The rule before: the whole active set, sorted, each on its walk's first engine with fewer than ceil(apps / engines). */
  const everyTime = (keys: string[], pods: string[]): Map<string, string> => {
    const ring = new HashRing(pods);
    const count = new Map<string, number>();
    return new Map([...keys].sort().map((key) => {
      const pod = ring.walk(key).find((p) => (count.get(p) ?? 0) < Math.ceil(keys.length / pods.length))!;
      count.set(pod, (count.get(pod) ?? 0) + 1);
      return [key, pod];
    }));
  };
  let moved = 0;
  for (let run = 0; run < 20; run++) {
    const keys = Array.from({ length: 7 }, (_, i) => `run-${run}-app-${i}`);
    const pods = ["e0", "e1", "e2"].slice(0, 2 + (run % 2));
    let homes = new Map<string, string>();
    for (let n = 1; n <= keys.length; n++) {
      const next = assignHomes(keys.slice(0, n), pods, homes);
      for (const [key, pod] of homes) t.equal(next.get(key), pod, `run ${run}: ${key} stays on ${pod} when app ${n} arrives`);
      homes = next;
      if (n > 1) moved += keys.slice(0, n - 1).filter((k) => everyTime(keys.slice(0, n), pods).get(k) !== everyTime(keys.slice(0, n - 1), pods).get(k)).length;
    }
    t.same([...assignHomes(keys, [...pods].reverse())], [...homes], `run ${run}: one assignment of all seven, engines listed backwards, gives the same homes`);
    t.same([...assignHomes(keys.slice(0, 4), pods, assignHomes(keys.slice(0, 2), pods))].sort(), [...homes].slice(0, 4).sort(), `run ${run}: so does a replica that saw apps 3 and 4 in one batch`);
  }
  t.ok(moved > 0, `control: assigning the whole active set again by ceil(apps / engines) in sorted order (the rule before) moved ${moved} homes in these runs`);
});

t.test("engines change: an app keeps its home while that engine is there and within the share; the rest are placed again", async (t) => {
  const keys = ["a1", "a2", "a3", "a4", "a5", "a6"];
  const two = assignHomes(keys, ["e0", "e1"]);
  const three = assignHomes(keys, ["e0", "e1", "e2"], two);
  const per = (homes: Map<string, string>, pod: string): string[] => keys.filter((k) => homes.get(k) === pod);
  t.ok(["e0", "e1", "e2"].every((p) => per(three, p).length <= 2), `at most two an engine: ${JSON.stringify([...three])}`);
  for (const pod of ["e0", "e1"]) t.same(per(three, pod), per(two, pod).filter((k) => three.get(k) === pod).slice(0, 2), `${pod} keeps the first of its apps, in arrival order`);
  t.equal(keys.filter((k) => three.get(k) !== two.get(k)).length, 2, "two apps move, to the new engine's share");
  const back = assignHomes(keys, ["e0", "e2"], three);
  t.ok(per(three, "e0").every((k) => back.get(k) === "e0") && per(three, "e2").every((k) => back.get(k) === "e2"), "e1 leaves: only its apps move");
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

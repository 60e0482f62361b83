import t from "tap";
import { intOpt, enumOpt, boolOpt, parseArgv, type Source } from "../../common/src/index.js";

const src = (argv: string[], env: Record<string, string> = {}): Source => ({ flags: parseArgv(argv), env });

t.test("flags override env over defaults", async (t) => {
  t.equal(intOpt(src([], {}), "threads", 1), 1);
  t.equal(intOpt(src([], { THREADS: "3" }), "threads", 1), 3);
  t.equal(intOpt(src(["--threads=2"], { THREADS: "3" }), "threads", 1), 2);
  t.equal(intOpt(src(["--threads", "4"]), "threads", 1), 4);
  t.equal(boolOpt(src(["--grammar"]), "grammar", false), true);
});

t.test("invalid values are rejected with the flag and env names", async (t) => {
  t.throws(() => intOpt(src(["--threads=x"]), "threads", 1), /--threads \(THREADS\): expected an integer/);
  t.throws(() => intOpt(src(["--threads=0"]), "threads", 1, { min: 1 }), /must be >= 1/);
  t.throws(() => enumOpt(src(["--kv-policy=maybe"]), "kv-policy", ["keep", "swap"] as const, "keep"), /one of keep\|swap/);
});

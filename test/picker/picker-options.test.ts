/**
 * The endpoint picker's validated config: NATS and the pool are required,
 * the pool names `<namespace>/<name>`, and the prefix index is the router's
 * (`events` by default, `heartbeat` on request, anything else refused naming
 * the flag), so both front doors place from the same view.
 */
import t from "tap";
import { parseArgv } from "../../common/src/config.js";
import { parsePickerOptions } from "../../router/src/picker/config.js";

const parse = (argv: string[], env: Record<string, string> = { NATS_URL: "nats://x" }) => parsePickerOptions({ flags: parseArgv(argv), env });

t.test("NATS and the pool are required; the pool is <namespace>/<name>", async (t) => {
  t.throws(() => parse(["--pool", "team/pool"], {}), /--nats-url/);
  t.throws(() => parse([]), /--pool/);
  t.throws(() => parse(["--pool", "pool"]), /--pool/);
  t.same(parse(["--pool", "team/pool"]).pool, { namespace: "team", name: "pool" });
});

t.test("--prefix-index: events by default, heartbeat on request, anything else refused naming the flag", async (t) => {
  t.equal(parse(["--pool", "team/pool"]).prefixIndex, "events");
  t.equal(parse(["--pool", "team/pool", "--prefix-index", "heartbeat"]).prefixIndex, "heartbeat");
  t.equal(parse(["--pool", "team/pool"], { NATS_URL: "nats://x", PREFIX_INDEX: "heartbeat" }).prefixIndex, "heartbeat");
  t.throws(() => parse(["--pool", "team/pool", "--prefix-index", "exact"]), /--prefix-index/);
});

import t from "tap";
import { parseArgv } from "../../common/src/index.js";
import { parseRouterOptions, routerOptions } from "../../router/src/config.js";

t.test("routerOptions: the flags' defaults on loopback, overrides on top, no credentials", async (t) => {
  const parsed = parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: "nats://x:4222" } });
  const built = routerOptions({ natsUrl: "nats://x:4222", presenceMs: 500, placement: "least-loaded" });
  t.equal(built.host, "127.0.0.1");
  t.equal(built.port, 0, "a free port");
  t.equal(built.presenceMs, 500);
  t.equal(built.placement, "least-loaded");
  t.equal(built.security, undefined, "open unless the caller passes credentials");
  for (const k of ["loadFactor", "engineTtlMs", "maxBodyBytes", "maxProgramCalls", "programKeepMs", "upstreamTimeoutMs"] as const) t.equal(built[k], parsed[k], `${k} is the flag's default`);
});

t.test("parseRouterOptions refuses a missing NATS URL and a bad router id", async (t) => {
  t.throws(() => parseRouterOptions({ flags: parseArgv([]), env: {} }), /--nats-url/);
  t.throws(() => parseRouterOptions({ flags: parseArgv(["--router-id", "a b"]), env: { NATS_URL: "nats://x" } }), /invalid --router-id/);
});

t.test("the cold-start hold's timeout and bound: defaults, and out-of-range values refused naming the flag", async (t) => {
  const parsed = parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: "nats://x:4222" } });
  t.equal(parsed.coldStartHoldMs, 60_000);
  t.equal(parsed.coldStartMaxHeld, 100);
  const set = parseRouterOptions({ flags: parseArgv(["--cold-start-hold-ms", "0", "--cold-start-max-held", "5"]), env: { NATS_URL: "nats://x" } });
  t.same([set.coldStartHoldMs, set.coldStartMaxHeld], [0, 5], "0 turns the hold off");
  t.throws(() => parseRouterOptions({ flags: parseArgv(["--cold-start-hold-ms", "-1"]), env: { NATS_URL: "nats://x" } }), /--cold-start-hold-ms/);
  t.throws(() => parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: "nats://x", COLD_START_MAX_HELD: "lots" } }), /--cold-start-max-held \(COLD_START_MAX_HELD\)/);
});

t.test("--prefix-index: events by default, heartbeat on request, anything else refused naming the flag", async (t) => {
  t.equal(parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: "nats://x" } }).prefixIndex, "events");
  t.equal(parseRouterOptions({ flags: parseArgv(["--prefix-index", "heartbeat"]), env: { NATS_URL: "nats://x" } }).prefixIndex, "heartbeat");
  t.equal(parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: "nats://x", PREFIX_INDEX: "heartbeat" } }).prefixIndex, "heartbeat");
  t.throws(() => parseRouterOptions({ flags: parseArgv(["--prefix-index", "exact"]), env: { NATS_URL: "nats://x" } }), /--prefix-index/);
});

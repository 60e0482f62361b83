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

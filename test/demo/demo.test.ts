/**
 * @module The README's main command, as a user runs it: `hack/demo.ts
 * --quick` brings up the local stack serving the sample AgentApp (NATS, the
 * sample ToolPool's runner, an engine process, the router), runs the sample
 * session through the app's endpoint in async and sync mode, and shuts down.
 */
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

t.test("hack/demo.ts serves the sample AgentApp through the router, async and sync", async (t) => {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "hack/demo.ts"), "--quick"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LOG_LEVEL: "warn" },
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  clearTimeout(timer);
  t.equal(code, 0, `demo exits 0; output:\n${out.slice(-4000)}`);
  t.match(out, /AgentApp default\/assistant served by the router at http:\/\/127\.0\.0\.1:\d+\/v1\/apps\/default\/assistant/);
  t.match(out, /tools: echo, sleep, get_weather/);
  t.match(out, /local stack: tool get_weather: .* stand-in/, "the cluster-internal HTTP tool is served by a local stand-in, and the demo says so");
  // Every call of the sample DAG goes out and its result comes back as an interrupt, in both modes.
  for (const id of ["weather", "flights", "hotel", "total"]) {
    t.equal(out.match(new RegExp(`interrupt  ${id} \\(tool_result\\)`, "g"))?.length, 2, `${id}: one result per mode`);
  }
  t.match(out, /interrupt {2}weather \(tool_result\) "\{"city":"Lisbon","forecast/, "the weather result comes from the HTTP tool");
  t.match(out, /local stack: AgentApp assistant-sync: a copy of assistant with callingMode sync/);
  t.match(out, /async finished in \d+% of the sync time/);
  t.match(out, /Shut down cleanly/);
  t.notMatch(out, /demo failed/);
});

/**
 * @module A router replica as its own process (the entrypoint the chart
 * runs, `router/src/main.ts`), for tests (which SIGKILL one) and the
 * placement bench's `--routers N`. The port
 * comes from its "listening" log line, readiness from `/readyz`; it is
 * stopped (SIGTERM, then SIGKILL) at its owner's teardown. `ROUTER_LOGS=1` copies
 * its log to stderr; a router that exits on its own prints its log's tail.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { watchListening } from "./listening-port.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

interface Teardownable {
  teardown(fn: () => unknown): void;
}

export interface RouterProcess {
  url: string;
  child: ChildProcess;
  /** Ends it at once, as a crashed pod or a node loss would (no shutdown at all). */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `router/src/main.ts` with `args` (flags) and `env` (options by environment) on a free loopback port. */
export async function spawnRouter(t: Teardownable, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RouterProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "router/src/main.ts"), "--port", "0", "--host", "127.0.0.1", "--log-level", "info", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  // Its log's tail, where it ends when nobody asked it to.
  child.once("exit", (code, signal) => {
    if (!stopping) process.stderr.write(`router ${args.join(" ")} exited (${code ?? signal}): ${log.tail().slice(-4000)}\n`);
  });
  let stopping = false;
  const gone = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const kill = async (): Promise<void> => {
    stopping = true;
    if (gone()) return;
    child.kill("SIGKILL");
    await exited;
  };
  const stop = async (): Promise<void> => {
    stopping = true;
    if (gone()) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  };
  t.teardown(stop);
  // A test that crashes runs no teardown: the router must not outlive it.
  process.once("exit", () => child.kill("SIGKILL"));
  const log = watchListening(child, exited, { what: "router", timeoutMs: 60_000, echo: process.env["ROUTER_LOGS"] === "1" });
  const port = await log.port;
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (!(await fetch(`${url}/readyz`).then((r) => r.ok, () => false))) {
    if (gone() || Date.now() > deadline) throw new Error(`router not ready: ${log.tail().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, child, kill, stop };
}

/**
 * @module Runs an engine pod as a child process (`engine-pod/src/main.ts`,
 * the entrypoint the EnginePool Deployment runs) and waits until it reports
 * ready: the port comes from its "listening" log line, readiness from
 * `/readyz`. Used by the benchmarks and the local stack.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { watchListening } from "./listening-port.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface EngineProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `args` are engine flags (`--model-preset bench --executor nats ...`); `--port 0` is added. `logFile` keeps its whole log (stdout). */
export async function spawnEngine(args: string[], options: { readyTimeoutMs?: number; env?: NodeJS.ProcessEnv; logFile?: string } = {}): Promise<EngineProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "engine-pod/src/main.ts"), "--port", "0", "--host", "127.0.0.1", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, LOG_LEVEL: process.env["LOG_LEVEL"] ?? "info", ...options.env },
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  if (options.logFile !== undefined) child.stdout!.pipe(createWriteStream(options.logFile));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const log = watchListening(child, exited, { what: "engine", timeoutMs: options.readyTimeoutMs ?? 120_000 });
    const port = await log.port;
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
    for (;;) {
      if (child.exitCode !== null) throw new Error(`engine exited with ${child.exitCode} while loading: ${log.tail().slice(-2000)}`);
      const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
      if (ready) break;
      if (Date.now() > deadline) throw new Error("engine not ready in time");
      await new Promise((r) => setTimeout(r, 250));
    }
    return { url, child, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

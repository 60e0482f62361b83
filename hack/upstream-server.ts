/**
 * @module Starts and stops a real third-party OpenAI-compatible server on
 * loopback: llama.cpp's server as packaged by llama-cpp-python
 * (`hack/tools/70-llama-server.sh`, built on demand), serving the generated
 * model's text-marker copy (`hack/upstream-model.ts`). Used by the upstream
 * backend's tests and the benchmark's upstream rows. `kill()` ends it
 * abruptly (SIGKILL), for tests of a server that dies mid-stream.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./nats.js";
import { ensureUpstreamModel } from "./upstream-model.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface UpstreamServerOptions {
  preset?: "test" | "bench";
  /** Context size (default 8192). */
  contextSize?: number;
  threads?: number;
  /** llama-cpp-python `--chat_format` (default: the model's own template). */
  chatFormat?: string;
  port?: number;
}

export function llamaServerBinary(): string {
  const bin = join(process.env["INTERLACE_BIN"] ?? join(process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache"), "bin"), "llama-openai-server");
  if (!existsSync(bin)) {
    const r = spawnSync("bash", [join(ROOT, "hack/tools/70-llama-server.sh")], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) throw new Error(`llama-openai-server is not installed and hack/tools/70-llama-server.sh failed (exit ${r.status})`);
  }
  return bin;
}

export class UpstreamServer {
  private exited: Promise<void>;
  private constructor(
    readonly url: string,
    readonly model: string,
    readonly port: number,
    private child: ChildProcess,
    private readonly args: string[],
  ) {
    this.exited = new Promise((r) => child.once("exit", () => r()));
  }

  /** Starts the server and resolves once `GET /v1/models` answers. */
  static async start(options: UpstreamServerOptions = {}): Promise<UpstreamServer> {
    const bin = llamaServerBinary();
    const modelPath = await ensureUpstreamModel(options.preset ?? "test");
    const port = options.port ?? (await freePort());
    const args = [
      "--model", modelPath,
      "--model_alias", `interlace-${options.preset ?? "test"}`,
      "--host", "127.0.0.1",
      "--port", String(port),
      "--n_ctx", String(options.contextSize ?? 8192),
      "--n_threads", String(options.threads ?? 1),
      "--n_threads_batch", String(options.threads ?? 1),
      ...(options.chatFormat !== undefined ? ["--chat_format", options.chatFormat] : []),
    ];
    const server = new UpstreamServer(`http://127.0.0.1:${port}/v1`, `interlace-${options.preset ?? "test"}`, port, spawnServer(bin, args), args);
    await server.waitReady();
    return server;
  }

  private async waitReady(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`llama-openai-server exited with ${this.child.exitCode} while starting`);
      const ok = await fetch(`${this.url}/models`).then((r) => r.ok, () => false);
      if (ok) return;
      if (Date.now() > deadline) throw new Error("llama-openai-server not ready in time");
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGKILL: the server dies as a crashed pod would, mid-stream included. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    await this.exited;
  }

  /** Starts the same server again on the same port (after {@link kill}). */
  async restart(): Promise<void> {
    await this.kill();
    const fresh = spawnServer(llamaServerBinary(), this.args);
    this.child = fresh;
    this.exited = new Promise((r) => fresh.once("exit", () => r()));
    await this.waitReady();
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

function spawnServer(bin: string, args: string[]): ChildProcess {
  const child = spawn(bin, args, { cwd: ROOT, stdio: ["ignore", "ignore", process.env["UPSTREAM_VERBOSE"] === "1" ? "inherit" : "ignore"] });
  return child;
}

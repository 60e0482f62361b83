/**
 * @module Starts and stops a real `nats-server` with JetStream on loopback:
 * a free port, a store directory (temporary unless given), stopped on
 * {@link NatsServer.stop}. Used by the NATS tests, the benchmark and the local
 * stack (`hack/stack.ts`). The binary comes from `hack/tools/10-nats-server.sh`
 * (run on demand when it is missing).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface NatsServerOptions {
  /** Default: a free port. */
  port?: number;
  /** JetStream store directory; default: a fresh temporary one, removed on stop. */
  storeDir?: string;
  /** Forward the server's log lines (default false). */
  verbose?: boolean;
}

/** The cached nats-server binary, installed on demand. */
export function natsServerBinary(): string {
  const bin = join(process.env["INTERLACE_BIN"] ?? join(process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache"), "bin"), "nats-server");
  if (!existsSync(bin)) {
    const r = spawnSync("bash", [join(ROOT, "hack/tools/10-nats-server.sh")], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) throw new Error(`nats-server is not installed and hack/tools/10-nats-server.sh failed (exit ${r.status})`);
  }
  return bin;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((done) => {
    const sock = tcpConnect({ host: "127.0.0.1", port }, () => {
      sock.destroy();
      done(true);
    });
    sock.once("error", () => done(false));
  });
}

/** A running nats-server. */
export class NatsServer {
  private child: ChildProcess | null = null;
  private readonly ownsStore: boolean;
  readonly storeDir: string;

  private constructor(
    readonly port: number,
    storeDir: string | undefined,
    private readonly verbose: boolean,
  ) {
    this.ownsStore = storeDir === undefined;
    this.storeDir = storeDir ?? mkdtempSync(join(tmpdir(), "interlace-nats-"));
  }

  /** Starts a server and resolves once it accepts connections. */
  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const server = new NatsServer(options.port ?? (await freePort()), options.storeDir, options.verbose ?? false);
    await server.launch();
    return server;
  }

  /** `nats://127.0.0.1:<port>` */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  private async launch(): Promise<void> {
    const bin = natsServerBinary();
    const child = spawn(bin, ["-js", "-a", "127.0.0.1", "-p", String(this.port), "-sd", this.storeDir], {
      stdio: ["ignore", this.verbose ? "inherit" : "ignore", this.verbose ? "inherit" : "pipe"],
    });
    this.child = child;
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    let exited: number | null | undefined;
    child.once("exit", (code) => {
      exited = code;
      if (this.child === child) this.child = null;
    });
    const deadline = Date.now() + 20_000;
    // Ready = the port accepts connections and JetStream has logged its start.
    while (Date.now() < deadline) {
      if (exited !== undefined) throw new Error(`nats-server exited with ${exited}: ${stderr}`);
      if ((this.verbose || stderr.includes("Server is ready")) && (await canConnect(this.port))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGKILL");
    throw new Error(`nats-server did not start on port ${this.port} within 20s: ${stderr}`);
  }

  /** Stops the process (SIGTERM, SIGKILL after 5 s) and waits for it to exit. Keeps the store. */
  async halt(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const child = this.child;
    if (child === null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  /** Stops and starts again on the same port and store directory (streams, consumers and stored messages survive). */
  async restart(downMs = 0): Promise<void> {
    await this.halt();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  /** Stops the server and removes a temporary store. */
  async stop(): Promise<void> {
    await this.halt();
    if (this.ownsStore) rmSync(this.storeDir, { recursive: true, force: true });
  }
}

// `npx tsx hack/nats.ts [--port 4222] [--store DIR]`: a server for manual use, until Ctrl-C.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const port = arg("port");
  const storeDir = arg("store");
  const server = await NatsServer.start({ port: port === undefined ? 4222 : Number(port), ...(storeDir !== undefined ? { storeDir } : {}) });
  console.log(`nats-server (JetStream) on ${server.url}, store ${server.storeDir}; Ctrl-C stops it`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void server.stop().then(() => process.exit(0)));
}

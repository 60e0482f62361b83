/**
 * @module Starts and stops a real `nats-server` with JetStream on loopback:
 * a free port, a store directory (temporary unless given), stopped on
 * {@link NatsServer.stop}. Used by the NATS tests, the benchmark and the local
 * stack (`hack/stack.ts`). The binary comes from `hack/tools/10-nats-server.sh`
 * (run on demand when it is missing).
 *
 * Optionally secured as in the chart ({@link createNatsSecurity}): JWT/nkey
 * authentication with the permission layout of common/src/security, and TLS
 * with certificates from the machine's openssl. {@link NatsCluster} runs three
 * such servers as one JetStream cluster (streams and buckets at R3); a single
 * open server stays the default.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createTrustRoot, mintUserCreds, serverAuthConfig, type NatsTrustRoot } from "../common/src/security/nats-credentials.js";
import type { NatsSecurity } from "../common/src/security/nats-connect.js";
import type { NatsIdentity } from "../common/src/security/nats-permissions.js";
import { generateCa, generateServerCert } from "./certs.js";
import { freePort, retryOnPortTaken } from "./free-port.js";

export { freePort };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface NatsServerOptions {
  /** Default: a free port. */
  port?: number;
  /** JetStream store directory; default: a fresh temporary one, removed on stop. */
  storeDir?: string;
  /** Forward the server's log lines (default false). */
  verbose?: boolean;
  /** Authentication and TLS (default: an open server, as on a laptop). */
  security?: NatsSecurityFixture;
  /** The server's `max_payload` in bytes (default: the server's, 1 MiB). */
  maxPayloadBytes?: number;
  /** Cluster membership (set by {@link NatsCluster}). */
  cluster?: { name: string; port: number; routes: number[]; serverName: string };
}

/** What a secured server (or cluster) trusts: a trust root, and TLS files when TLS is on. */
export interface NatsSecurityFixture {
  dir: string;
  root?: NatsTrustRoot;
  tls?: { caFile: string; certFile: string; keyFile: string };
}

/**
 * Makes a trust root (`auth`, default true) and a CA plus a loopback server
 * certificate (`tls`, default true) in a fresh folder; {@link natsClientSecurity}
 * then mints the credentials of any identity.
 */
export async function createNatsSecurity(options: { auth?: boolean; tls?: boolean } = {}): Promise<NatsSecurityFixture> {
  const dir = mkdtempSync(join(tmpdir(), "interlace-nats-sec-"));
  const fixture: NatsSecurityFixture = { dir };
  if (options.auth ?? true) fixture.root = await createTrustRoot();
  if (options.tls ?? true) {
    await generateCa(dir, "interlace-nats-test-ca");
    await generateServerCert(dir, "nats", ["IP:127.0.0.1", "DNS:localhost"]);
    fixture.tls = { caFile: join(dir, "ca.crt"), certFile: join(dir, "nats.crt"), keyFile: join(dir, "nats.key") };
  }
  return fixture;
}

/** The client settings for `id` against a server secured with `fixture` (creds minted now). */
export async function natsClientSecurity(fixture: NatsSecurityFixture | undefined, id: NatsIdentity): Promise<NatsSecurity> {
  const out: NatsSecurity = {};
  if (fixture?.root !== undefined) out.creds = await mintUserCreds(fixture.root.accountSeed, id);
  if (fixture?.tls !== undefined) out.caFile = fixture.tls.caFile;
  return out;
}

/** Removes a fixture's folder. */
export function removeNatsSecurity(fixture: NatsSecurityFixture): void {
  rmSync(fixture.dir, { recursive: true, force: true });
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

  private readonly configFile: string;

  private constructor(
    readonly port: number,
    readonly httpPort: number,
    storeDir: string | undefined,
    private readonly verbose: boolean,
    private readonly options: NatsServerOptions,
  ) {
    this.ownsStore = storeDir === undefined;
    this.storeDir = storeDir ?? mkdtempSync(join(tmpdir(), "interlace-nats-"));
    this.configFile = `${this.storeDir}.conf`;
  }

  /**
   * Starts a server and resolves once it accepts connections. A port found
   * free can be taken by another process before nats-server binds it
   * (parallel tests): the ports picked here are picked again, twice at most.
   */
  static start(options: NatsServerOptions = {}): Promise<NatsServer> {
    return retryOnPortTaken(async () => {
      const server = new NatsServer(options.port ?? (await freePort()), await freePort(), options.storeDir, options.verbose ?? false, options);
      try {
        await server.launch();
        return server;
      } catch (err) {
        await server.stop();
        throw err;
      }
    }, 3);
  }

  /** `nats://127.0.0.1:<port>` (`tls://` when the server requires TLS). */
  get url(): string {
    return `${this.options.security?.tls !== undefined ? "tls" : "nats"}://127.0.0.1:${this.port}`;
  }

  /** The server's config file: the chart's settings, on loopback. */
  private renderConfig(): string {
    const o = this.options;
    const lines = [
      `listen: "127.0.0.1:${this.port}"`,
      `http: "127.0.0.1:${this.httpPort}"`,
      `server_name: "${o.cluster?.serverName ?? `n${this.port}`}"`,
      `jetstream { store_dir: "${this.storeDir}" }`,
    ];
    if (o.maxPayloadBytes !== undefined) lines.push(`max_payload: ${o.maxPayloadBytes}`);
    const tls = o.security?.tls;
    if (tls !== undefined) lines.push(`tls { cert_file: "${tls.certFile}", key_file: "${tls.keyFile}", timeout: 5 }`);
    if (o.security?.root !== undefined) lines.push(serverAuthConfig(o.security.root));
    if (o.cluster !== undefined) {
      const routes = o.cluster.routes.map((p) => `"nats-route://127.0.0.1:${p}"`).join(", ");
      lines.push(`cluster { name: "${o.cluster.name}", listen: "127.0.0.1:${o.cluster.port}", routes: [${routes}] }`);
    }
    return `${lines.join("\n")}\n`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  private async launch(): Promise<void> {
    const bin = natsServerBinary();
    writeFileSync(this.configFile, this.renderConfig(), { mode: 0o600 });
    const child = spawn(bin, ["-c", this.configFile], {
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

  /** Stops (`signal`, SIGKILL for a crash) and starts again on the same port and store directory (streams, consumers and stored messages survive). */
  async restart(downMs = 0, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    await this.halt(signal);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  /** Stops the server and removes a temporary store. */
  async stop(): Promise<void> {
    await this.halt();
    if (this.ownsStore) rmSync(this.storeDir, { recursive: true, force: true });
    rmSync(this.configFile, { force: true });
  }

  /** True once the server reports itself healthy, JetStream included (in a cluster: a meta leader is known). */
  async healthy(): Promise<boolean> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.httpPort}/healthz`, { signal: AbortSignal.timeout(2_000) });
      return res.ok;
    } catch {
      return false;
    }
  }
}

export interface NatsClusterOptions {
  /** Default 3. */
  size?: number;
  security?: NatsSecurityFixture;
  verbose?: boolean;
}

/**
 * A JetStream cluster of nats-servers on loopback (default three nodes, so
 * streams and buckets can be R3 and survive the loss of one node). Clients
 * are given every node's URL ({@link NatsCluster.urls}).
 */
export class NatsCluster {
  private constructor(readonly nodes: NatsServer[]) {}

  static async start(options: NatsClusterOptions = {}): Promise<NatsCluster> {
    const size = options.size ?? 3;
    const clusterPorts = await Promise.all(Array.from({ length: size }, () => freePort()));
    const started = await Promise.allSettled(
      clusterPorts.map((port, i) =>
        NatsServer.start({
          verbose: options.verbose ?? false,
          ...(options.security !== undefined ? { security: options.security } : {}),
          cluster: { name: "interlace", port, routes: clusterPorts.filter((p) => p !== port), serverName: `nats-${i}` },
        }),
      ),
    );
    const nodes = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed !== undefined) {
      // The nodes that did start would keep the caller's process alive with no handle to stop them.
      await Promise.all(nodes.map((n) => n.stop()));
      throw failed.reason;
    }
    const cluster = new NatsCluster(nodes);
    await cluster.waitHealthy();
    return cluster;
  }

  /** Every node's URL (the client's seed list). */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  /** Waits until every running node reports healthy (JetStream meta leader elected). */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const states = await Promise.all(this.nodes.filter((n) => n.running).map((n) => n.healthy()));
      if (states.every(Boolean)) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`NATS cluster not healthy within ${timeoutMs} ms`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
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

/**
 * @module How every Interlace component connects to NATS securely: its
 * credentials file (user JWT + seed, see `nats-credentials.ts`), the CA that
 * signed the servers' TLS certificates, and the inbox prefix its permissions
 * allow (read from the JWT, so the credentials alone configure it).
 *
 * Configured by flags or the environment: `INTERLACE_NATS_CREDS` (path of a
 * `.creds` file) and `INTERLACE_NATS_CA` (path of a PEM CA bundle; a
 * `tls://` URL or a CA turns TLS on). {@link connectNats} is the one place a
 * connection's options are built.
 */
import { readFileSync } from "node:fs";
import { credentialFile, CredentialEnv } from "./credential-files.js";
import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";

export interface NatsSecurity {
  /** Path of a `.creds` file. */
  credsFile?: string;
  /** Or its contents. */
  creds?: string;
  /** PEM CA bundle that signed the servers' certificates; implies TLS. */
  caFile?: string;
}

/**
 * Reads {@link NatsSecurity} from `INTERLACE_NATS_CREDS` / `INTERLACE_NATS_CA`
 * (empty values count as unset). With `INTERLACE_AUTH=required` the
 * credentials file must exist (default path in the credentials mount), else
 * this throws naming it: a component never falls back to an open connection.
 */
export function natsSecurityFromEnv(env: NodeJS.ProcessEnv = process.env): NatsSecurity {
  const out: NatsSecurity = {};
  const creds = credentialFile("NatsCreds", env);
  const ca = env[CredentialEnv.NatsCa];
  if (creds !== undefined) out.credsFile = creds;
  if (ca !== undefined && ca !== "") out.caFile = ca;
  return out;
}

/** The claims of a user JWT inside a `.creds` file (no signature check: the server does that). */
export function credsClaims(creds: string): { name?: string; sub?: string; nats?: { tags?: string[] } } {
  const m = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(creds);
  if (m === null) throw new Error("not a NATS credentials file: no user JWT");
  const payload = m[1]!.split(".")[1];
  if (payload === undefined) throw new Error("not a NATS credentials file: malformed user JWT");
  return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { name?: string; sub?: string; nats?: { tags?: string[] } };
}

/** The connect options that authenticate with `sec` (nothing when `sec` is empty: an open server). */
export function natsConnectOptions(sec: NatsSecurity = {}): Partial<ConnectionOptions> {
  const out: Partial<ConnectionOptions> = {};
  const creds = sec.creds ?? (sec.credsFile !== undefined ? readFileSync(sec.credsFile, "utf8") : undefined);
  if (creds !== undefined) {
    out.authenticator = credsAuthenticator(new TextEncoder().encode(creds));
    // The identity's permissions allow replies only below `_INBOX_<its name>` (see nats-permissions.ts).
    const name = credsClaims(creds).name;
    if (name !== undefined && name !== "") out.inboxPrefix = `_INBOX_${name}`;
  }
  if (sec.caFile !== undefined) out.tls = { caFile: sec.caFile };
  return out;
}

/** Who connects, and to which servers. */
export interface NatsClientOptions {
  /** Server URLs (a comma-separated string or a list). */
  servers: string | readonly string[];
  /** The connection's name, as the server's monitoring shows it. */
  name: string;
  security?: NatsSecurity;
}

/**
 * Every component's NATS connection: authenticated by `security`, it
 * reconnects forever (every 250 ms) and pings every 10 s, so a restarted
 * server or a lost route is noticed and survived the same way everywhere.
 */
export function connectNats(options: NatsClientOptions): Promise<NatsConnection> {
  const servers = typeof options.servers === "string" ? options.servers.split(",") : [...options.servers];
  return connect({ servers, name: options.name, ...natsConnectOptions(options.security ?? {}), maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 10_000 });
}

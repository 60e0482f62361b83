/**
 * @module Cluster access without loading `@kubernetes/client-node` at run
 * time: client-node 2.x pulls in undici 8, which needs Node >= 22.19 and
 * fails to load on the Node 20 this project targets. This reads the parts
 * of a kubeconfig the operator needs — server, CA, client certificate, bearer
 * token or token file, basic auth — from a file, from the in-cluster service
 * account, or from the default locations. Exec and auth-provider plugins are
 * not supported (the operator runs in-cluster or with a token/cert config).
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse } from "yaml";

/** Everything needed to talk to one API server as one user. */
export interface ClusterAccess {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** A static bearer token. */
  token?: string;
  /** A file holding the bearer token, re-read as it rotates (projected service-account tokens). */
  tokenFile?: string;
  username?: string;
  password?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  /** The context's namespace, when it names one. */
  namespace?: string;
}

interface RawKubeconfig {
  "current-context"?: string;
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
  contexts?: { name: string; context: { cluster: string; user: string; namespace?: string } }[];
}

function fileOrData(base: string, file: unknown, data: unknown): Buffer | undefined {
  if (typeof data === "string" && data !== "") return Buffer.from(data, "base64");
  if (typeof file === "string" && file !== "") return readFileSync(path.resolve(base, file));
  return undefined;
}

/** Parses kubeconfig YAML; relative file paths resolve against `baseDir`. */
export function parseKubeconfig(text: string, baseDir: string, context?: string): ClusterAccess {
  const cfg = parse(text) as RawKubeconfig;
  const ctxName = context ?? cfg["current-context"];
  const ctx = cfg.contexts?.find((c) => c.name === ctxName)?.context ?? (ctxName === undefined ? cfg.contexts?.[0]?.context : undefined);
  if (!ctx) throw new Error(`kubeconfig: context ${ctxName ?? "(none)"} not found`);
  const cluster = cfg.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster || typeof cluster["server"] !== "string") throw new Error(`kubeconfig: cluster ${ctx.cluster} not found or has no server`);
  const user = cfg.users?.find((u) => u.name === ctx.user)?.user ?? {};
  if (user["exec"] !== undefined || user["auth-provider"] !== undefined) {
    throw new Error(`kubeconfig: user ${ctx.user} uses an exec/auth-provider plugin, which the operator does not support; use a token or client certificate`);
  }
  const access: ClusterAccess = { server: cluster["server"] };
  const ca = fileOrData(baseDir, cluster["certificate-authority"], cluster["certificate-authority-data"]);
  if (ca) access.ca = ca;
  const cert = fileOrData(baseDir, user["client-certificate"], user["client-certificate-data"]);
  if (cert) access.cert = cert;
  const key = fileOrData(baseDir, user["client-key"], user["client-key-data"]);
  if (key) access.key = key;
  if (typeof user["token"] === "string") access.token = user["token"];
  if (typeof user["tokenFile"] === "string") access.tokenFile = path.resolve(baseDir, user["tokenFile"]);
  if (typeof user["username"] === "string") access.username = user["username"];
  if (typeof user["password"] === "string") access.password = user["password"];
  if (cluster["insecure-skip-tls-verify"] === true) access.insecureSkipTlsVerify = true;
  if (typeof cluster["tls-server-name"] === "string") access.tlsServerName = cluster["tls-server-name"];
  if (ctx.namespace) access.namespace = ctx.namespace;
  return access;
}

/** Reads a kubeconfig file. */
export function loadKubeconfigFile(file: string, context?: string): ClusterAccess {
  return parseKubeconfig(readFileSync(file, "utf8"), path.dirname(path.resolve(file)), context);
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** The pod's service account (KUBERNETES_SERVICE_HOST/PORT, the mounted token and CA). */
export function loadInCluster(env: NodeJS.ProcessEnv = process.env, dir = SA_DIR): ClusterAccess {
  const host = env["KUBERNETES_SERVICE_HOST"];
  const port = env["KUBERNETES_SERVICE_PORT"] ?? "443";
  if (!host) throw new Error("not running in a cluster: KUBERNETES_SERVICE_HOST is not set");
  const hostPart = host.includes(":") ? `[${host}]` : host;
  return {
    server: `https://${hostPart}:${port}`,
    ca: readFileSync(path.join(dir, "ca.crt")),
    tokenFile: path.join(dir, "token"),
    namespace: readFileSync(path.join(dir, "namespace"), "utf8").trim(),
  };
}

/** `--kubeconfig FILE`, else in-cluster, else `$KUBECONFIG` (first entry), else `~/.kube/config`. */
export function loadClusterAccess(file?: string, env: NodeJS.ProcessEnv = process.env): ClusterAccess {
  if (file) return loadKubeconfigFile(file);
  if (env["KUBERNETES_SERVICE_HOST"]) return loadInCluster(env);
  const fromEnv = env["KUBECONFIG"]?.split(path.delimiter).find((p) => p !== "");
  return loadKubeconfigFile(fromEnv ?? path.join(os.homedir(), ".kube", "config"));
}

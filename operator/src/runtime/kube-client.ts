/**
 * @module A thin typed REST client for the API server over node:https, with
 * credentials from {@link ClusterAccess} (kubeconfig or in-cluster). Each call
 * sets its own Content-Type explicitly: server-side apply must be sent as
 * `application/apply-patch+yaml` and status merges as
 * `application/merge-patch+json`, which the generated `@kubernetes/client-node`
 * APIs make easy to get wrong (they default PATCH bodies to JSON-patch); and
 * client-node 2.x cannot be loaded on Node 20 at all (its undici 8 needs
 * Node 22), so only its types are used.
 */
import http from "node:http";
import https from "node:https";
import { createInterface } from "node:readline";
import { readFile } from "node:fs/promises";
import type { KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError } from "./errors.js";
import type { ClusterAccess } from "./kubeconfig.js";
import { collectionPath, objectPath, type ResourceType } from "./resource-type.js";

/** A list answer: the items and the list's resourceVersion to watch from. */
export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
}

/** One watch event as the API server streams it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubernetesObject & { code?: number; reason?: string; message?: string };
}

export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  /** Ask for BOOKMARK events so the resume point stays fresh on quiet watches. */
  allowWatchBookmarks?: boolean;
  /** Server-side watch timeout; the stream ends cleanly after it. */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export interface ApplyOptions {
  fieldManager: string;
  /** Take over fields owned by other managers (a hand edit); controllers apply with force. */
  force?: boolean;
  subresource?: string;
}

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** Destroy the request when its socket is idle this long. */
  idleMs?: number;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

/** Typed REST calls against one API server. */
export class KubeClient {
  private readonly server: URL;
  private readonly agent: http.Agent;
  private token: { value: string; readAt: number } | null = null;

  constructor(readonly access: ClusterAccess) {
    this.server = new URL(access.server);
    this.agent =
      this.server.protocol === "https:"
        ? new https.Agent({
            keepAlive: true,
            ...(access.ca ? { ca: access.ca } : {}),
            ...(access.cert ? { cert: access.cert } : {}),
            ...(access.key ? { key: access.key } : {}),
            ...(access.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
            ...(access.tlsServerName ? { servername: access.tlsServerName } : {}),
          })
        : new http.Agent({ keepAlive: true });
  }

  /** Reads one object; null when it does not exist. */
  async get<T extends KubernetesObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | null> {
    const res = await this.send("GET", objectPath(type, namespace, name), {});
    if (res.status === 404) return null;
    return this.decode<T>(res, "GET", type.kind, name);
  }

  /** Lists objects (all namespaces when `namespace` is undefined). */
  async list<T extends KubernetesObject>(type: ResourceType, namespace?: string, opts: { labelSelector?: string } = {}): Promise<ObjectList<T>> {
    const res = await this.send("GET", collectionPath(type, namespace), { query: { labelSelector: opts.labelSelector } });
    const body = this.decode<{ items?: T[]; metadata?: { resourceVersion?: string } }>(res, "LIST", type.kind, "");
    const items = (body.items ?? []).map((item) => withTypeMeta(item, type));
    return { items, resourceVersion: body.metadata?.resourceVersion ?? "" };
  }

  async create<T extends KubernetesObject>(type: ResourceType, obj: T, opts: { fieldManager?: string } = {}): Promise<T> {
    const res = await this.send("POST", collectionPath(type, obj.metadata?.namespace), {
      body: obj,
      contentType: "application/json",
      query: { fieldManager: opts.fieldManager },
    });
    return this.decode<T>(res, "POST", type.kind, obj.metadata?.name ?? "");
  }

  /** PUT with the object's resourceVersion: optimistic concurrency (409 on a lost race). */
  async replace<T extends KubernetesObject>(type: ResourceType, obj: T, opts: { fieldManager?: string; subresource?: string } = {}): Promise<T> {
    const name = obj.metadata?.name ?? "";
    const res = await this.send("PUT", objectPath(type, obj.metadata?.namespace, name, opts.subresource), {
      body: obj,
      contentType: "application/json",
      query: { fieldManager: opts.fieldManager },
    });
    return this.decode<T>(res, "PUT", type.kind, name);
  }

  /**
   * Server-side apply: the body is the full intent of `fieldManager`; fields it
   * applied before and omits now are removed, fields others own are kept.
   */
  async apply<T extends KubernetesObject>(type: ResourceType, obj: T, opts: ApplyOptions): Promise<T> {
    const name = obj.metadata?.name ?? "";
    const res = await this.send("PATCH", objectPath(type, obj.metadata?.namespace, name, opts.subresource), {
      // JSON is valid YAML, so the apply-patch+yaml content type accepts it as is.
      body: obj,
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: opts.fieldManager, force: opts.force },
    });
    return this.decode<T>(res, "APPLY", type.kind, name);
  }

  /** JSON merge patch (RFC 7386), optionally on a subresource such as `status`. */
  async mergePatch<T extends KubernetesObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    opts: { subresource?: string; fieldManager?: string } = {},
  ): Promise<T> {
    const res = await this.send("PATCH", objectPath(type, namespace, name, opts.subresource), {
      body: patch,
      contentType: "application/merge-patch+json",
      query: { fieldManager: opts.fieldManager },
    });
    return this.decode<T>(res, "PATCH", type.kind, name);
  }

  /** Deletes one object; false when it was already gone. */
  async delete(type: ResourceType, namespace: string | undefined, name: string, opts: { propagationPolicy?: string } = {}): Promise<boolean> {
    const res = await this.send("DELETE", objectPath(type, namespace, name), {
      body: { kind: "DeleteOptions", apiVersion: "v1", ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}) },
      contentType: "application/json",
    });
    if (res.status === 404) return false;
    this.decode(res, "DELETE", type.kind, name);
    return true;
  }

  /**
   * Streams watch events until the server ends the stream (resolve) or the
   * request fails (reject with {@link KubeApiError}; 410 when the resource
   * version is too old). Abort with `opts.signal` to stop early (resolves).
   */
  async watch(type: ResourceType, namespace: string | undefined, opts: WatchOptions, onEvent: (ev: WatchEvent) => void): Promise<void> {
    const query = {
      watch: true,
      resourceVersion: opts.resourceVersion,
      labelSelector: opts.labelSelector,
      allowWatchBookmarks: opts.allowWatchBookmarks,
      timeoutSeconds: opts.timeoutSeconds,
    };
    // A connection that dies silently would hang the watch forever: give up
    // when nothing (not even a bookmark) arrived well past the server timeout.
    const idleMs = ((opts.timeoutSeconds ?? 300) + 60) * 1000;
    const req = await this.open("GET", collectionPath(type, namespace), { query, idleMs, ...(opts.signal ? { signal: opts.signal } : {}) });
    let res: http.IncomingMessage;
    try {
      res = await req.response;
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    if (res.statusCode !== 200) {
      const text = await readAll(res);
      throw toApiError(res.statusCode ?? 0, text, "WATCH", type.kind, "");
    }
    await new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: res });
      lines.on("line", (line) => {
        if (line.trim() === "") return;
        let ev: WatchEvent;
        try {
          ev = JSON.parse(line) as WatchEvent;
        } catch {
          return;
        }
        if (ev.type !== "ERROR" && ev.type !== "BOOKMARK") ev.object = withTypeMeta(ev.object, type);
        onEvent(ev);
      });
      lines.on("close", () => resolve());
      // readline re-emits the stream's errors; both must be handled (an aborted watch is a clean end).
      const onError = (err: Error): void => (opts.signal?.aborted ? resolve() : reject(err));
      res.on("error", onError);
      lines.on("error", onError);
    });
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }

  private async send(method: string, path: string, opts: RequestOptions): Promise<{ status: number; text: string }> {
    const req = await this.open(method, path, { idleMs: 60_000, ...opts });
    const res = await req.response;
    return { status: res.statusCode ?? 0, text: await readAll(res) };
  }

  private async open(method: string, path: string, opts: RequestOptions): Promise<{ response: Promise<http.IncomingMessage> }> {
    const url = new URL(this.server.toString().replace(/\/$/, "") + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": "interlace-operator" };
    const auth = await this.authorization();
    if (auth) headers["Authorization"] = auth;
    const reqOpts: https.RequestOptions = { method, agent: this.agent, headers };
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) {
      headers["Content-Type"] = opts.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    const mod = url.protocol === "https:" ? https : http;
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = mod.request(url, { ...reqOpts, ...(opts.signal ? { signal: opts.signal } : {}) }, resolve);
      req.on("error", reject);
      if (opts.idleMs !== undefined) req.setTimeout(opts.idleMs, () => req.destroy(new Error(`no data for ${opts.idleMs} ms`)));
      if (body !== undefined) req.write(body);
      req.end();
    });
    return { response };
  }

  /** Bearer token (a token file is re-read every minute: projected tokens rotate) or basic auth. */
  private async authorization(): Promise<string | undefined> {
    const { token, tokenFile, username, password } = this.access;
    if (tokenFile) {
      if (!this.token || Date.now() - this.token.readAt > 60_000) {
        this.token = { value: (await readFile(tokenFile, "utf8")).trim(), readAt: Date.now() };
      }
      return `Bearer ${this.token.value}`;
    }
    if (token) return `Bearer ${token}`;
    if (username !== undefined) return `Basic ${Buffer.from(`${username}:${password ?? ""}`).toString("base64")}`;
    return undefined;
  }

  private decode<T>(res: { status: number; text: string }, verb: string, kind: string, name: string): T {
    if (res.status < 200 || res.status > 299) throw toApiError(res.status, res.text, verb, kind, name);
    return JSON.parse(res.text) as T;
  }
}

/** Lists drop apiVersion/kind from items; put them back so objects are self-describing. */
function withTypeMeta<T extends KubernetesObject>(obj: T, type: ResourceType): T {
  if (obj.kind !== undefined && obj.apiVersion !== undefined) return obj;
  const apiVersion = type.group === "" ? type.version : `${type.group}/${type.version}`;
  return { ...obj, apiVersion, kind: type.kind };
}

function readAll(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}

function toApiError(status: number, text: string, verb: string, kind: string, name: string): KubeApiError {
  let reason = "";
  let message = text.slice(0, 500);
  try {
    const body = JSON.parse(text) as { reason?: string; message?: string };
    reason = body.reason ?? "";
    message = body.message ?? message;
  } catch {
    // not a Status object; keep the raw text
  }
  return new KubeApiError(status, reason, `${verb} ${kind}${name ? ` ${name}` : ""}: ${status} ${reason}: ${message}`);
}

/**
 * @module HTTP to one AgentApp's endpoint on a router
 * (`<baseUrl>/v1/apps/<namespace>/<app>/`), with its API key: JSON requests
 * that reject with the router's error, and event streams.
 */
import type { EventSourceMessage } from "eventsource-parser";
import { InterlaceAPIError } from "./errors.js";
import { readEvents } from "./sse.js";

export interface TransportOptions {
  /** The router, e.g. `http://interlace-router.interlace.svc:8080`. */
  baseUrl: string;
  /** `<namespace>/<name>` of the AgentApp. */
  app: string;
  apiKey?: string | undefined;
  /** Another `fetch` (a proxy agent, tests). */
  fetch?: typeof fetch;
}

export class Transport {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly fetch: typeof fetch;

  constructor(options: TransportOptions) {
    const [namespace, name, ...rest] = options.app.split("/");
    if (namespace === undefined || namespace === "" || name === undefined || name === "" || rest.length > 0) throw new TypeError(`app must be "<namespace>/<name>", got "${options.app}"`);
    this.base = `${options.baseUrl.replace(/\/+$/, "")}/v1/apps/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
    this.headers = options.apiKey !== undefined && options.apiKey !== "" ? { authorization: `Bearer ${options.apiKey}` } : {};
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** `path` relative to the app (empty: the app itself); a non-2xx answer rejects with {@link InterlaceAPIError}. */
  async request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const res = await this.fetch(path === "" ? this.base : `${this.base}/${path}`, {
      method,
      headers: { ...this.headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(signal !== undefined ? { signal } : {}),
    });
    if (!res.ok) throw await InterlaceAPIError.from(res);
    return res;
  }

  /** The events of the stream at `path` until the server ends it. */
  async *events(path: string, lastEventId?: string, signal?: AbortSignal): AsyncGenerator<EventSourceMessage> {
    const res = await this.fetch(`${this.base}/${path}`, {
      headers: { ...this.headers, accept: "text/event-stream", ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}) },
      ...(signal !== undefined ? { signal } : {}),
    });
    if (!res.ok || res.body === null) throw await InterlaceAPIError.from(res);
    yield* readEvents(res.body);
  }
}

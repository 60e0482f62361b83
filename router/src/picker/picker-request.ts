/**
 * @module What one HTTP request through the gateway means to the picker (a
 * pure function of the request and the apps; no I/O). The same API as the
 * router's, so a client moves between the two front doors by changing its
 * base URL:
 *
 * - `POST /v1/apps/{ns}/{app}/sessions` and `.../chat/completions`: the
 *   app's spec merged in (request-merge.ts, the router's own code), the path
 *   rewritten to the engine's, placed by the merged prompt's prefix chain.
 *   A created session's id comes back as the router's routed id
 *   (`<pod>.<engine id>[.<owner tag>]`), so...
 * - `GET .../sessions/{id}/events`, `POST .../sessions/{id}/interrupts`,
 *   `DELETE .../sessions/{id}` are pinned to the engine the id names.
 * - `GET /v1/apps/{ns}/{app}`: answered by the picker.
 * - `POST /v1/chat/completions` (OpenAI): `model` naming an app of the pool
 *   (`app` or `ns/app`) merges that app; any other model is placed by its own
 *   messages and tools, as any OpenAI-compatible server behind a gateway.
 *   A session header (`x-session-id`, `session_id`) keeps a conversation on
 *   its engine within the load bound, as through the router.
 * - Any request carrying `x-interlace-engine: <pod>` is pinned to that engine
 *   (how a client that used the engine's own API finds its session or
 *   response again); the picker sets that header on every answer.
 * - Anything else is placed on the least loaded engine, unchanged.
 *
 * The Responses API through the gateway needs its ids routed in streamed
 * bodies; it is refused (501) rather than half served: use the router.
 */
import { prefixHashChain, type ChatMessage, ErrorCode } from "../../../common/src/index.js";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import { HttpError, badRequest, notFound } from "../errors.js";
import { isObject, mergeChatRequest, mergeInterruptRequest, mergeSessionRequest } from "../request-merge.js";
import { parseRoutedSessionId } from "../session-id.js";
import type { SessionOwners } from "../session-owner.js";
import { withSession } from "../session-affinity.js";

/** The header that pins a request to an engine, and names the engine on every answer. */
export const ENGINE_HEADER = "x-interlace-engine";

export interface PickerRequest {
  method: string;
  /** `:path` (with any query string). */
  path: string;
  headers: Readonly<Record<string, string>>;
  /** The parsed JSON body (undefined when there is none or it is not JSON). */
  body: unknown;
  /** Why the body is not JSON, when it is not. */
  invalidJson?: string;
  /** The authenticated principal (owner tags of session ids). */
  principal: string;
}

export interface PickerContext {
  pool: { namespace: string; name: string };
  /** An app of this pool by namespace and name (undefined: unknown, or on another pool). */
  app(namespace: string, name: string): AppConfig | undefined;
  owners: SessionOwners;
}

/** A session created by this request: its answer's id becomes a routed id. */
export interface SessionCreation {
  app: { namespace: string; name: string };
  segments: number;
  /** Leading entries of the chain that are the app's shared prefix (system prompt, tools): what a hot-prefix warm puts in a store. */
  appSegments: number;
}

export type PickerRoute =
  | {
      kind: "place";
      chain: string[];
      affinityKey: string;
      /** The conversation's key from a session header (session-affinity.ts). */
      sessionKey?: string;
      /** Replaces `:path` when set. */
      path?: string;
      /** Replaces the body when set. */
      body?: unknown;
      session?: SessionCreation;
    }
  | {
      kind: "pinned";
      pod: string;
      path?: string;
      body?: unknown;
      /** The routed session id the request names. */
      sessionId?: string;
      /** The engine's JSON answer names the session by its engine id: give the client the routed one (interrupts, cancel). */
      routeAnswerIds?: boolean;
    }
  | { kind: "answer"; status: number; payload: unknown };

const APP_PATH = /^\/v1\/apps\/([^/]+)\/([^/]+)(\/.*)?$/;
const SESSION_PATH = /^\/sessions\/([^/]+)(\/events|\/interrupts)?$/;

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw badRequest(`malformed path segment "${part}"`);
  }
}

/** The JSON body of a route that needs one (400 `invalid_json` when it did not parse). */
function jsonBody(req: PickerRequest): unknown {
  if (req.invalidJson !== undefined) throw new HttpError(400, ErrorCode.InvalidJson, `request body is not valid JSON: ${req.invalidJson}`);
  return req.body;
}

function appOf(ctx: PickerContext, namespace: string, name: string): AppConfig {
  const app = ctx.app(namespace, name);
  if (app === undefined) throw notFound(`no AgentApp "${namespace}/${name}" is served on EnginePool ${ctx.pool.namespace}/${ctx.pool.name} (unknown app, another pool, or its config has not reached the picker)`);
  return app;
}

/** The app of this pool a request acts on (by its path, or an OpenAI request's `model`), whose keys it must hold; undefined for none. */
export function requestApp(req: Omit<PickerRequest, "principal">, ctx: Pick<PickerContext, "app" | "pool">): AppConfig | undefined {
  const [pathname = "/"] = req.path.split("?", 1);
  const app = APP_PATH.exec(pathname);
  if (app !== null) {
    try {
      return ctx.app(decodeURIComponent(app[1]!), decodeURIComponent(app[2]!));
    } catch {
      return undefined; // a malformed segment: routeRequest answers 400
    }
  }
  if (req.method === "POST" && pathname === "/v1/chat/completions" && isObject(req.body)) return appForModel(ctx, req.body["model"]);
  return undefined;
}

/** Interprets one request. Throws {@link HttpError} for the client's errors. */
export function routeRequest(req: PickerRequest, ctx: PickerContext): PickerRoute {
  const [pathname = "/"] = req.path.split("?", 1);
  const pinnedPod = req.headers[ENGINE_HEADER];
  const app = APP_PATH.exec(pathname);
  if (app !== null) return appRoute(req, ctx, appOf(ctx, decode(app[1]!), decode(app[2]!)), app[3] ?? "");
  if (pinnedPod !== undefined && pinnedPod !== "") return { kind: "pinned", pod: pinnedPod };
  if (req.method === "POST" && pathname === "/v1/chat/completions") return chatCompletion(req, ctx);
  if (req.method === "POST" && pathname === "/v1/responses") throw notImplemented();
  return { kind: "place", chain: [], affinityKey: `path:${pathname}` };
}

function notImplemented(): HttpError {
  return new HttpError(501, ErrorCode.BadRequest, "the Responses API is not served through the gateway's endpoint picker (its ids name engines inside streamed bodies); use the Interlace router's endpoint");
}

function appRoute(req: PickerRequest, ctx: PickerContext, app: AppConfig, rest: string): PickerRoute {
  const appKey = { namespace: app.namespace, name: app.name };
  if (rest === "" && req.method === "GET") {
    return { kind: "answer", status: 200, payload: { namespace: app.namespace, name: app.name, enginePool: app.enginePool.name, callingMode: app.callingMode, objective: app.objective, tools: app.tools.map((t) => t.name) } };
  }
  if (rest === "/sessions" && req.method === "POST") {
    const merged = mergeSessionRequest(app, jsonBody(req));
    return { kind: "place", chain: merged.chain, affinityKey: merged.affinityKey, path: "/v1/sessions", body: merged.body, session: { app: appKey, segments: merged.chain.length, appSegments: merged.appSegments } };
  }
  if (rest === "/chat/completions" && req.method === "POST") {
    const merged = mergeChatRequest(app, jsonBody(req));
    return { kind: "place", chain: merged.chain, affinityKey: merged.affinityKey, ...conversation(req), path: "/v1/chat/completions", body: merged.body };
  }
  if (rest.startsWith("/responses")) throw notImplemented();
  const session = SESSION_PATH.exec(rest);
  if (session === null) throw notFound(`no route ${req.method} ${req.path}`);
  const id = decode(session[1]!);
  const parsed = parseRoutedSessionId(id);
  if (parsed === null) throw notFound(`no session "${id}" (not a session id Interlace issued)`);
  if (!ctx.owners.owns(parsed.base, parsed.ownerTag, req.principal)) {
    throw new HttpError(403, ErrorCode.Forbidden, `session "${id}" belongs to another API key: only the key that opened it may read, interrupt or cancel it`);
  }
  const enginePath = `/v1/sessions/${encodeURIComponent(parsed.engineSessionId)}`;
  const action = session[2] ?? "";
  if (action === "/events" && req.method === "GET") return { kind: "pinned", pod: parsed.pod, path: `${enginePath}/events`, sessionId: id };
  if (action === "" && req.method === "DELETE") return { kind: "pinned", pod: parsed.pod, path: enginePath, sessionId: id, routeAnswerIds: true };
  if (action === "/interrupts" && req.method === "POST") {
    const body = mergeInterruptRequest(app, jsonBody(req));
    if (body.kind === "user" && !app.interrupts.userInterrupts) {
      throw new HttpError(403, ErrorCode.Forbidden, `AgentApp ${app.namespace}/${app.name} does not take user interrupts (spec.interrupts.userInterrupts: false)`);
    }
    return { kind: "pinned", pod: parsed.pod, path: `${enginePath}/interrupts`, body, sessionId: id, routeAnswerIds: true };
  }
  throw notFound(`no route ${req.method} ${req.path}`);
}

/** A chat request's session key, as the router reads it (session-affinity.ts). */
function conversation(req: PickerRequest): { sessionKey?: string } {
  return withSession({}, (name) => req.headers[name]);
}

/** OpenAI `content` (string, null or text parts) as text, for hashing. */
function contentText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((p) => (isObject(p) && typeof p["text"] === "string" ? p["text"] : "")).join("");
  return "";
}

/** An app of the pool named by `model` (`app` in the pool's namespace, or `ns/app`). */
function appForModel(ctx: Pick<PickerContext, "app" | "pool">, model: unknown): AppConfig | undefined {
  if (typeof model !== "string" || model === "") return undefined;
  const slash = model.indexOf("/");
  return slash < 0 ? ctx.app(ctx.pool.namespace, model) : ctx.app(model.slice(0, slash), model.slice(slash + 1));
}

function chatCompletion(req: PickerRequest, ctx: PickerContext): PickerRoute {
  const body = jsonBody(req);
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  const app = appForModel(ctx, body["model"]);
  if (app !== undefined) {
    const merged = mergeChatRequest(app, body);
    return { kind: "place", chain: merged.chain, affinityKey: merged.affinityKey, ...conversation(req), body: merged.body };
  }
  // Any other model: the request's own system prompt, tools and turns, hashed as engines advertise them.
  const raw = body["messages"];
  if (!Array.isArray(raw) || raw.length === 0) throw badRequest(`"messages" must be a non-empty array`);
  const messages: ChatMessage[] = raw.map((m) => {
    const role = isObject(m) ? m["role"] : undefined;
    return { role: role === "system" || role === "developer" ? "system" : role === "assistant" || role === "tool" ? role : "user", content: contentText(isObject(m) ? m["content"] : "") };
  });
  const tools = Array.isArray(body["tools"])
    ? body["tools"].filter(isObject).map((t) => {
        const f = isObject(t["function"]) ? t["function"] : {};
        return { name: typeof f["name"] === "string" ? f["name"] : "", description: typeof f["description"] === "string" ? f["description"] : "", parameters: f["parameters"] as Record<string, unknown> };
      })
    : [];
  const chain = prefixHashChain({ messages, tools });
  return { kind: "place", chain, affinityKey: chain[0] ?? `model:${String(body["model"])}`, ...conversation(req) };
}

/**
 * What a request through the gateway means to the endpoint picker (pure):
 * app routes merge the app's spec with the router's own merge and rewrite
 * the path to the engine's; session routes are pinned to the engine their
 * routed id names, owner tags checked; an OpenAI `model` naming an app of the
 * pool merges that app, any other model is placed by its own prompt, hashed
 * as engines advertise it; `x-interlace-engine` pins; bad input is the
 * client's error with its reason. And the ext_proc message helpers: the
 * subset hint in both shapes data planes send, metadata through
 * `google.protobuf.Struct`, and body chunks within Envoy's limit.
 */
import t, { type Test } from "tap";
import { prefixHashChain } from "../../common/src/index.js";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import type { AppConfig } from "../../common/src/protocol/index.js";
import { HttpError } from "../../router/src/errors.js";
import { mergeChatRequest } from "../../router/src/request-merge.js";
import { routedSessionId } from "../../router/src/session-id.js";
import { SessionOwners } from "../../router/src/session-owner.js";
import { routeRequest, type PickerRequest } from "../../router/src/picker/index.js";
import { BODY_CHUNK_BYTES, jsonToStruct, pickedResponse, streamedBody, structToJson, subsetHint } from "../../router/src/picker/envoy-messages.js";
import { appConfig } from "../router/fixtures.js";

const alpha = appConfig("alpha");
const elsewhere = appConfig("beta", { enginePool: { name: "other" } });
const apps = new Map<string, AppConfig>([
  ["default/alpha", alpha],
  ["default/beta", elsewhere],
]);
const owners = SessionOwners.from(parseApiKeys("ana:0123456789abcdef0123,bo:fedcba9876543210fedc"), "a shared owner-tag key");
const ctx = {
  pool: { namespace: "default", name: "pool" },
  owners,
  app: (ns: string, name: string) => {
    const app = apps.get(`${ns}/${name}`);
    return app?.enginePool.name === "pool" ? app : undefined;
  },
};

function req(method: string, path: string, body?: unknown, extra: Partial<PickerRequest> = {}): PickerRequest {
  return { method, path, headers: {}, body, principal: "ana", ...extra };
}

function refused(t: Test, fn: () => unknown, status: number, pattern: RegExp): void {
  try {
    fn();
    t.fail(`expected ${status}`);
  } catch (err) {
    t.ok(err instanceof HttpError, String(err));
    t.equal((err as HttpError).status, status);
    t.match((err as HttpError).message, pattern);
  }
}

t.test("app routes: merged as the router merges them, the path rewritten to the engine's", async (t) => {
  const session = routeRequest(req("POST", "/v1/apps/default/alpha/sessions", { prompt: "hello" }), ctx);
  t.equal(session.kind, "place");
  if (session.kind !== "place") return;
  t.equal(session.path, "/v1/sessions");
  t.same(session.session, { app: { namespace: "default", name: "alpha" }, segments: session.chain.length, appSegments: 2 }, "the system prompt and the tool block are the app's shared prefix");
  const body = session.body as { prompt: { role: string; content: string }[]; tools: unknown[] };
  t.equal(body.prompt[0]?.content, alpha.systemPrompt, "the app's system prompt first");
  t.same(body.tools, alpha.tools);
  const chat = routeRequest(req("POST", "/v1/apps/default/alpha/chat/completions", { messages: [{ role: "user", content: "hi" }] }), ctx);
  const merged = mergeChatRequest(alpha, { messages: [{ role: "user", content: "hi" }] });
  t.same(chat, { kind: "place", chain: merged.chain, affinityKey: merged.affinityKey, path: "/v1/chat/completions", body: merged.body }, "the router's merge, the same chain");
  const described = routeRequest(req("GET", "/v1/apps/default/alpha"), ctx);
  t.equal(described.kind, "answer");
});

t.test("session routes are pinned to the engine the routed id names, for its owner only", async (t) => {
  const base = routedSessionId("engine-b", "s-1");
  const id = routedSessionId("engine-b", "s-1", owners.tag(base, "ana"));
  t.same(routeRequest(req("GET", `/v1/apps/default/alpha/sessions/${id}/events`), ctx), { kind: "pinned", pod: "engine-b", path: "/v1/sessions/s-1/events", sessionId: id });
  t.same(routeRequest(req("DELETE", `/v1/apps/default/alpha/sessions/${id}`), ctx), { kind: "pinned", pod: "engine-b", path: "/v1/sessions/s-1", sessionId: id, routeAnswerIds: true });
  const intr = routeRequest(req("POST", `/v1/apps/default/alpha/sessions/${id}/interrupts`, { value: "go" }), ctx);
  t.same(intr, { kind: "pinned", pod: "engine-b", path: "/v1/sessions/s-1/interrupts", body: { value: "go", kind: "user", maxQueued: alpha.interrupts.maxQueued }, sessionId: id, routeAnswerIds: true });
  refused(t, () => routeRequest(req("GET", `/v1/apps/default/alpha/sessions/${id}/events`, undefined, { principal: "bo" }), ctx), 403, /another API key/);
  refused(t, () => routeRequest(req("GET", "/v1/apps/default/alpha/sessions/garbage/events"), ctx), 404, /not a session id/);
  const quiet = appConfig("quiet", { interrupts: { userInterrupts: false, maxQueued: 4 } });
  apps.set("default/quiet", quiet);
  refused(t, () => routeRequest(req("POST", `/v1/apps/default/quiet/sessions/${id}/interrupts`, { value: "stop" }), ctx), 403, /userInterrupts: false/);
});

t.test("OpenAI chat completions: an app's model merges the app; any other model is placed by its own prompt", async (t) => {
  const byApp = routeRequest(req("POST", "/v1/chat/completions", { model: "alpha", messages: [{ role: "user", content: "hi" }] }), ctx);
  t.same(byApp, { kind: "place", ...(({ stream: _s, appSegments: _a, ...m }) => m)(mergeChatRequest(alpha, { model: "alpha", messages: [{ role: "user", content: "hi" }] })) });
  const qualified = routeRequest(req("POST", "/v1/chat/completions", { model: "default/alpha", messages: [{ role: "user", content: "hi" }] }), ctx);
  t.ok(qualified.kind === "place" && qualified.body !== undefined, "ns/app names the app too");
  const tools = [{ type: "function", function: { name: "lookup", description: "Looks up.", parameters: { type: "object" } } }];
  const raw = routeRequest(
    req("POST", "/v1/chat/completions", { model: "llama", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], tools }),
    ctx,
  );
  const chain = prefixHashChain({ messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], tools: [{ name: "lookup", description: "Looks up.", parameters: { type: "object" } }] });
  t.same(raw, { kind: "place", chain, affinityKey: chain[0] }, "the body passes through unchanged; the chain is the engine's");
  t.equal(routeRequest(req("POST", "/v1/chat/completions", { model: "beta", messages: [{ role: "user", content: "x" }] }), ctx).kind, "place", "an app of another pool is just a model name here");
});

t.test("a session header (x-session-id, or Codex's session_id) is the chat's session key, as through the router", async (t) => {
  const body = { model: "alpha", messages: [{ role: "user", content: "hi" }] };
  const keyed = routeRequest(req("POST", "/v1/chat/completions", body, { headers: { "x-session-id": "conv-1" } }), ctx);
  t.ok(keyed.kind === "place" && keyed.sessionKey === "session:conv-1");
  const codex = routeRequest(req("POST", "/v1/apps/default/alpha/chat/completions", body, { headers: { session_id: "conv-2" } }), ctx);
  t.ok(codex.kind === "place" && codex.sessionKey === "session:conv-2");
  const raw = routeRequest(req("POST", "/v1/chat/completions", { ...body, model: "llama" }, { headers: { "x-session-id": "conv-3" } }), ctx);
  t.ok(raw.kind === "place" && raw.sessionKey === "session:conv-3", "any model");
  const none = routeRequest(req("POST", "/v1/chat/completions", body), ctx);
  t.ok(none.kind === "place" && none.sessionKey === undefined);
  refused(t, () => routeRequest(req("POST", "/v1/chat/completions", body, { headers: { "x-session-id": "x".repeat(300) } }), ctx), 400, /header "x-session-id" must be at most 256/);
});

t.test("x-interlace-engine pins; everything else is placed unchanged; bad input is refused with a reason", async (t) => {
  t.same(routeRequest(req("GET", "/v1/sessions/abc/events", undefined, { headers: { "x-interlace-engine": "engine-a" } }), ctx), { kind: "pinned", pod: "engine-a" });
  t.same(routeRequest(req("GET", "/v1/models"), ctx), { kind: "place", chain: [], affinityKey: "path:/v1/models" });
  refused(t, () => routeRequest(req("POST", "/v1/apps/default/beta/sessions", { prompt: "x" }), ctx), 404, /EnginePool default\/pool/);
  refused(t, () => routeRequest(req("POST", "/v1/apps/default/alpha/sessions", undefined, { invalidJson: "Unexpected token" }), ctx), 400, /not valid JSON/);
  refused(t, () => routeRequest(req("POST", "/v1/apps/default/alpha/sessions", { prompt: "x", system: "mine" }), ctx), 400, /system/);
  refused(t, () => routeRequest(req("POST", "/v1/chat/completions", { model: "llama" }), ctx), 400, /messages/);
  refused(t, () => routeRequest(req("POST", "/v1/responses", { input: "x" }), ctx), 501, /Responses API/);
  refused(t, () => routeRequest(req("GET", "/v1/apps/default/alpha/nope"), ctx), 404, /no route/);
});

t.test("ext_proc helpers: subset hints in both shapes, Struct metadata, body chunks", async (t) => {
  t.equal(subsetHint({}), null, "no hint: the whole pool");
  t.same(subsetHint({ "envoy.lb.subset_hint": { "x-gateway-destination-endpoint-subset": ["10.0.0.1:8000", "10.0.0.2:8000"] } }), ["10.0.0.1:8000", "10.0.0.2:8000"]);
  t.same(subsetHint({ "envoy.lb.subset_hint": { "x-gateway-destination-endpoint-subset": "10.0.0.1:8000, 10.0.0.3" } }), ["10.0.0.1:8000", "10.0.0.3"]);
  t.same(subsetHint({ "envoy.lb.subset_hint": { "x-gateway-destination-endpoint-subset": [] } }), [], "an empty hint allows nothing");
  const meta = { "envoy.lb": { "x-gateway-destination-endpoint": "10.0.0.1:8000", n: 2, ok: true, list: ["a"] } };
  t.same(structToJson(jsonToStruct(meta)), meta);
  const picked = pickedResponse(["10.0.0.1:8000", "10.0.0.2:8000"], { ":path": "/v1/sessions" }, ["content-length"]);
  t.same(structToJson(picked.dynamicMetadata), { "envoy.lb": { "x-gateway-destination-endpoint": "10.0.0.1:8000,10.0.0.2:8000" } }, "camelCase Value fields: the metadata is not empty");
  const header = picked.requestHeaders?.response?.headerMutation?.setHeaders?.find((h) => h.header.key === "x-gateway-destination-endpoint");
  t.equal(header?.header.rawValue.toString(), "10.0.0.1:8000,10.0.0.2:8000", "the header carries the same value");
  const big = Buffer.alloc(BODY_CHUNK_BYTES * 2 + 5, 1);
  const chunks = streamedBody("requestBody", big, true).map((r) => r.requestBody!.response!.bodyMutation!.streamedResponse);
  t.same(chunks.map((c) => [c.body.length, c.endOfStream]), [[BODY_CHUNK_BYTES, false], [BODY_CHUNK_BYTES, false], [5, true]]);
  t.same(streamedBody("responseBody", Buffer.alloc(0), true).map((r) => r.responseBody!.response!.bodyMutation!.streamedResponse.endOfStream), [true], "an empty end still ends the stream");
});

/**
 * @module `POST /cache-tool-output/{response_id}` and
 * `POST /v1/sessions/{id}/cache-tool-output` on a real engine pod (the
 * generated `test` model): entries land in the session's tool cache under
 * the canonical key; an unknown id is 404, a malformed entry 400, an output
 * over the limit 413, and nothing of a rejected request is cached.
 */
import t, { type Test } from "tap";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { postJson, startTestPod } from "../server/helpers.js";

const { base, pod } = await startTestPod(t, ["--max-cached-output-bytes", "1024"]);
const tools = builtinToolSpecs().filter((s) => s.name === "sleep");

// A session parked in a trap on a long call: a live response to cache outputs for.
const res = await postJson(`${base}/v1/sessions`, {
  prompt: "Wait.",
  tools,
  maxTokens: 400,
  kvPolicy: "keep",
  policy: { type: "lpt-dag", calls: [{ id: "w", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
});
const { id } = (await res.json()) as { id: string };
t.teardown(() => pod.engine.cancel(id));

async function expectError(t: Test, r: Response, status: number, code: string, message: RegExp): Promise<void> {
  t.equal(r.status, status);
  const body = (await r.json()) as { error?: { code?: string; message?: string } };
  t.equal(body.error?.code, code);
  t.match(body.error?.message, message);
}

t.test("entries are cached under tool name + canonical params, per session", async (t) => {
  const r = await postJson(`${base}/cache-tool-output/${id}`, [
    { name: "search", params: { q: "oslo", n: 2 }, output: "sunny" },
    { name: "lookup", output: { temp: 3 }, keep_alive: 5 },
  ]);
  t.equal(r.status, 200);
  t.same(await r.json(), { cached: 2 });
  const cache = pod.toolCache;
  t.equal((await cache.peek(id, "search", { n: 2, q: "oslo" })!.future).output, "sunny", "argument order does not matter");
  const any = cache.take(id, "lookup", { whatever: 1 });
  t.equal((await any!.future).output, '{"temp":3}', "name-only entry answers any call; JSON output serialized");
  const r2 = await postJson(`${base}/v1/sessions/${id}/cache-tool-output`, { name: "search", params: { q: "oslo", n: 2 }, output: "rainy" });
  t.same(await r2.json(), { cached: 1 }, "the session route; a repost replaces the entry");
  t.equal((await cache.peek(id, "search", { q: "oslo", n: 2 })!.future).output, "rainy");
});

t.test("bad inputs: 404 unknown id, 400 malformed key, 413 over the limit; nothing cached", async (t) => {
  const before = pod.toolCache.stats().stored.client;
  await expectError(t, await postJson(`${base}/cache-tool-output/nope`, [{ name: "a", output: "x" }]), 404, "not_found", /no response "nope"/);
  await expectError(t, await postJson(`${base}/v1/sessions/nope/cache-tool-output`, [{ name: "a", output: "x" }]), 404, "not_found", /nope/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ output: "x" }]), 400, "bad_request", /entry 0: "name"/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "bad name!", output: "x" }]), 400, "bad_request", /tool name/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "a", params: [1], output: "x" }]), 400, "bad_request", /"params" must be an object/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "a", params: {} }]), 400, "bad_request", /"output" is required/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "a", output: "x", keep_alive: -1 }]), 400, "bad_request", /keep_alive/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "a", output: "x", extra: 1 }]), 400, "bad_request", /unknown field "extra"/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, "[]"), 400, "bad_request", /no entries/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, "{nope"), 400, "invalid_json", /not valid JSON/);
  await expectError(t, await postJson(`${base}/cache-tool-output/${id}`, [{ name: "a", output: "x" }, { name: "b", output: "y".repeat(1025) }]), 413, "payload_too_large", /entry 1: output of 1025 bytes exceeds the limit of 1024/);
  t.equal(pod.toolCache.stats().stored.client, before, "a rejected request caches nothing");
});

t.test("a session's speculation field is checked field by field", async (t) => {
  const create = (speculation: unknown, policy?: unknown): Promise<Response> =>
    postJson(`${base}/v1/sessions`, { prompt: "hi", tools, maxTokens: 4, speculation, ...(policy !== undefined ? { policy } : {}) });
  await expectError(t, await create({ lambda: 2 }), 400, "bad_request", /speculation.enabled/);
  await expectError(t, await create({ enabled: true, lambda: 0 }), 400, "bad_request", /speculation.lambda/);
  await expectError(t, await create({ enabled: true, pools: ["nope"] }), 400, "bad_request", /namespace\/name/);
  await expectError(t, await create({ enabled: true, draft: { type: "scripted", alpha: 0.5 } }), 400, "bad_request", /needs a scripted "lpt-dag" policy/);
  const lpt = { type: "lpt-dag", calls: [{ id: "a", tool: "sleep", arguments: { ms: 1 }, dependsOn: [] }] };
  await expectError(t, await create({ enabled: true, draft: { type: "scripted", alpha: 2 } }, lpt), 400, "bad_request", /alpha/);
  await expectError(t, await create({ enabled: true, draft: { type: "scripted", alpha: 0.5 } }, lpt), 400, "bad_request", /--draft-model/);
  const ok = await create({ enabled: true, lambda: 2, maxInFlight: 2, engineSide: false });
  t.equal(ok.status, 201, "valid settings are accepted");
});

/**
 * @module Every bad-input case of the session API gets a clear error and
 * loses nothing (real engine on the `test` model): invalid JSON, unknown
 * tools, bad schemas and modes, call arguments that break the schema (an
 * error interrupt the model reads; the session goes on), a prompt longer
 * than the context, more sessions than the engine holds (429 + Retry-After),
 * oversized bodies and prompts (413), and a client that disconnects
 * mid-stream (session cancelled, KV cells freed).
 */
import t, { type Test } from "tap";
import type { CreateSessionRequest, ToolSpec } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { ofType, postJson, readSession, startTestPod } from "./helpers.js";
import { waitFor } from "../helpers/wait.js";

// `pin`: a full engine stays full while its sessions wait on tools (the other retention policies would hand a paused one's cells over).
const { base, pod } = await startTestPod(t, ["--max-body-bytes", "65536", "--max-prompt-bytes", "16384", "--prefix-cache", "false", "--kv-retention", "pin"]);
const tools: ToolSpec[] = builtinToolSpecs().filter((s) => s.name === "sleep" || s.name === "echo");

async function expectError(t: Test, res: Response, status: number, code: string, message?: RegExp): Promise<void> {
  t.equal(res.status, status, `HTTP ${status}`);
  const body = (await res.json()) as { error?: { code?: string; message?: string } };
  t.equal(body.error?.code, code, `code ${code}`);
  t.type(body.error?.message, "string", "a message says what is wrong");
  if (message !== undefined) t.match(body.error?.message, message);
}


const create = (body: unknown): Promise<Response> => postJson(`${base}/v1/sessions`, body);

/** A session parked in a trap on a 60 s call (KV kept resident), until cancelled. */
const parked = (): CreateSessionRequest => ({
  prompt: "Wait.",
  tools,
  maxTokens: 400,
  kvPolicy: "keep",
  policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
});

t.test("invalid JSON → 400 invalid_json", async (t) => {
  await expectError(t, await create('{"prompt": "hi",'), 400, "invalid_json", /not valid JSON/);
  await expectError(t, await postJson(`${base}/v1/chat/completions`, "{nope"), 400, "invalid_json");
  await expectError(t, await create("[1, 2]"), 400, "bad_request", /JSON object/);
});

t.test("malformed requests → 400 naming the field", async (t) => {
  await expectError(t, await create({ prompt: "" }), 400, "bad_request", /prompt/);
  await expectError(t, await create({ prompt: "hi", mode: "turbo" }), 400, "bad_request", /"mode" must be one of "async", "sync", "syncParallel"/);
  await expectError(t, await create({ prompt: "hi", promt: "typo" }), 400, "bad_request", /unknown field "promt"/);
  await expectError(t, await create({ prompt: "hi", maxTokens: -3 }), 400, "bad_request", /maxTokens/);
  await expectError(t, await create({ prompt: [{ role: "wizard", content: "x" }] }), 400, "bad_request", /role/);
});

t.test("unknown tools → 400 unknown_tool", async (t) => {
  await expectError(t, await create({ prompt: "hi", tools: ["teleport"] }), 400, "unknown_tool", /unknown tool "teleport"; builtin tools: echo, sleep/);
  const spec = { name: "teleport", description: "x", parameters: { type: "object" } };
  await expectError(t, await create({ prompt: "hi", tools: [spec] }), 400, "unknown_tool", /not a builtin/);
  await expectError(t, await create({ prompt: "hi", tools: [{ ...spec, pool: { namespace: "ns", name: "p" } }] }), 400, "unknown_tool", /--executor nats/);
  const policy = { type: "lpt-dag", calls: [{ id: "a", tool: "calculator", arguments: {}, dependsOn: [] }] };
  await expectError(t, await create({ prompt: "hi", tools, policy }), 400, "unknown_tool", /not among the session's tools/);
});

t.test("bad tool schemas → 400 bad_request", async (t) => {
  const broken = { name: "echo", description: "x", parameters: { type: "object", properties: { text: { type: "text" } } } };
  await expectError(t, await create({ prompt: "hi", tools: [broken] }), 400, "bad_request", /not a valid JSON Schema/);
  const notObject = { name: "echo", description: "x", parameters: { type: "string" } };
  await expectError(t, await create({ prompt: "hi", tools: [notObject] }), 400, "bad_request", /must describe an object/);
  await expectError(t, await create({ prompt: "hi", tools: [{ name: "bad name!", parameters: {} }] }), 400, "bad_request", /"name" must match/);
  await expectError(t, await create({ prompt: "hi", tools: ["echo", "echo"] }), 400, "bad_request", /listed twice/);
});

t.test("call arguments that break the schema → an error interrupt the model reads; the session goes on", async (t) => {
  const res = await create({
    prompt: "Call a tool badly.",
    tools,
    maxTokens: 300,
    policy: {
      type: "text",
      pieces: ['[CALL]bad[HEAD]{"name": "sleep", "arguments": {"ms": "soon"}}[END]', " then", '[CALL]good[HEAD]{"name": "echo", "arguments": {"text": "fine"}}[END]', " onwards"],
    },
  });
  t.equal(res.status, 201);
  const { id } = (await res.json()) as { id: string };
  const events = await readSession(base, id);
  const callError = ofType(events, "call_error").find((e) => e.callId === "bad");
  t.ok(callError, "the invalid call is reported");
  t.equal(callError?.code, "invalid_arguments");
  const errorInterrupt = ofType(events, "interrupt").find((e) => e.id === "bad");
  t.equal(errorInterrupt?.kind, "tool_error", "the model gets an error interrupt");
  t.match(errorInterrupt?.value, /ms/, "which names the bad argument");
  t.ok(ofType(events, "call").some((c) => c.callId === "good"), "later calls still run");
  t.equal(ofType(events, "interrupt").find((e) => e.id === "good")?.value, "fine");
  const done = ofType(events, "done")[0];
  t.not(done?.reason, "error", "the session ends normally");
  t.not(done?.reason, "cancelled");
});

t.test("a prompt longer than the context → 400 context_overflow", async (t) => {
  const words = Array.from({ length: 2500 }, (_, i) => `w${i % 97}`).join(" ");
  await expectError(t, await create({ prompt: words, tools }), 400, "context_overflow", /context holds 2048/);
  const ok = await create({ prompt: "short", tools, maxTokens: 5 });
  t.equal(ok.status, 201, "the engine still takes sessions");
  await readSession(base, ((await ok.json()) as { id: string }).id);
});

t.test("more sessions than the engine holds → 429 with Retry-After", async (t) => {
  const ids: string[] = [];
  t.teardown(async () => {
    for (const id of ids) await fetch(`${base}/v1/sessions/${id}`, { method: "DELETE" });
  });
  for (let i = 0; i < 2; i++) {
    const res = await create(parked());
    t.equal(res.status, 201, `session ${i + 1} of 2 admitted`);
    ids.push(((await res.json()) as { id: string }).id);
  }
  const third = await create(parked());
  t.equal(third.headers.get("retry-after"), "1", "Retry-After says when to come back");
  await expectError(t, third, 429, "capacity", /busy/);
  const completion = await postJson(`${base}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
  await expectError(t, completion, 429, "capacity");
  // Nothing was lost: freeing a sequence admits the next session.
  await fetch(`${base}/v1/sessions/${ids.shift()}`, { method: "DELETE" });
  await waitFor("a sequence to be freed", () => pod.engine.stats().activeSessions < 2);
  const retry = await create({ ...parked(), policy: { type: "text", pieces: ["ok"] } });
  t.equal(retry.status, 201, "admitted once a sequence is free");
  await readSession(base, ((await retry.json()) as { id: string }).id);
});

t.test("oversized bodies and prompts → 413 with the reason", async (t) => {
  const huge = JSON.stringify({ prompt: "x".repeat(70_000) });
  await expectError(t, await create(huge), 413, "payload_too_large", /exceeds the limit of 65536 bytes \(--max-body-bytes\)/);
  await expectError(t, await create({ prompt: "y".repeat(20_000) }), 413, "payload_too_large", /prompt of 20000 bytes exceeds the limit of 16384 bytes/);
  const { id } = (await (await create({ prompt: "hi", tools, maxTokens: 3 })).json()) as { id: string };
  await readSession(base, id);
});

t.test("a client that disconnects mid-stream cancels its session and frees its KV cells", async (t) => {
  await waitFor("earlier sessions to end", () => pod.engine.stats().activeSessions === 0);
  const before = pod.engine.stats().kvCellsUsed;
  const { id } = (await (await create(parked())).json()) as { id: string };
  const abort = new AbortController();
  let cellsWhileParked = 0;
  await readSession(base, id, {
    signal: abort.signal,
    until: (e) => e.type === "trap",
    onEvent: (e) => {
      if (e.type === "trap") cellsWhileParked = pod.engine.stats().kvCellsUsed;
    },
  });
  t.ok(cellsWhileParked > before, `the parked session holds KV cells (${cellsWhileParked} > ${before})`);
  abort.abort();
  const session = pod.engine.getSession(id)!;
  const done = await session.finished;
  t.equal(done.reason, "cancelled", "the session ends as cancelled");
  await waitFor("the sequence to be released", () => pod.engine.stats().activeSessions === 0);
  t.equal(pod.engine.stats().kvCellsUsed, before, "its KV cells are freed");
});

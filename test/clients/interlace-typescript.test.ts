/**
 * Interlace's TypeScript client (`clients/typescript`) against a real router
 * with two real engines and a real nats-server: a map-reduce and a chain
 * written with `semanticFunction`, submitted call by call and run once a
 * value is asked for; functions that exist only in code beside the app's
 * own; an error rejected as `CallFailedError` naming the failing call; a
 * cancel mid-program (and another API key refused); a session with a user
 * interrupt and a cached tool output; every TypeScript example of the
 * README; and the package's build (ESM with declarations). Afterwards the
 * engines are idle.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import { CallFailedError, Interlace, InterlaceAPIError, ProgramCancelledError, semanticFunction, type Input, type SemanticVariable, type SessionEvent } from "../../clients/typescript/src/index.js";
import { eventually } from "../helpers/wait.js";
import { ALICE_KEY, APP, BOB_KEY, readmeExamples, ROOT, startClientStack } from "./interlace-stack.js";

t.setTimeout(600_000);

const { url, idle } = await startClientStack(t);
const client = new Interlace({ baseUrl: url, app: APP, apiKey: ALICE_KEY });

const CHUNKS = [
  "Revenue rose to 4.2 million in the north region, led by Ada Berg's team.",
  "Costs in the south fell by 8 percent after the warehouse in Lund closed.",
  "The east office hired 12 engineers; Omar Nasser now leads the platform group.",
  "Cash reserves stand at 9.1 million; the board approved a 0.3 dividend.",
];

const digest = semanticFunction({
  name: "digest",
  template: "Summarize this part of the quarterly report in one sentence, keeping every figure.\n\nPart:\n{{input:part}}\n\nSummary: {{output:summary}}",
  maxTokens: 6,
});
const merge = semanticFunction({ name: "merge", template: "Merge these summaries into one paragraph for the board.\n\n{{input:summaries}}\n\nParagraph: {{output:paragraph}}", maxTokens: 6 });
const refine = semanticFunction({ name: "refine", template: "Summary so far: {{input:summary}}\nNext part: {{input:part}}\nUpdated summary: {{output:updated}}", maxTokens: 6 });

t.test("a map-reduce: calls reach the router as made, run on a get, the maps as one task group", async (t) => {
  const program = client.program();
  const parts = CHUNKS.map((part) => program.call(digest, { part }).summary);
  const { paragraph } = program.call(merge, { summaries: parts });
  await program.flush();
  const before = await program.status();
  t.same(Object.keys(before.calls), [...parts.map((p) => p.call), paragraph.call], "the router has every call");
  t.same(new Set(Object.values(before.calls).map((c) => c.state)), new Set(["waiting"]), "none runs before a value is asked for");
  t.not(await paragraph.get({ criteria: "latency" }), "");
  const { calls } = await program.status();
  const maps = parts.map((p) => calls[p.call!]!);
  t.same(new Set(maps.map((m) => m.objective)), new Set(["task-group"]), "deduced over the whole DAG");
  t.equal(calls[paragraph.call!]!.objective, "latency");
  t.equal(new Set(maps.map((m) => m.engine)).size, 1, "the task group on one engine");
  await program.close();
  t.match((await program.status()).state, /^(running|succeeded)$/);
});

t.test("a chain: every step on the critical path", async (t) => {
  const program = client.program();
  let summary: Input = "(nothing yet)";
  const steps = [];
  for (const part of CHUNKS.slice(0, 3)) {
    const updated: SemanticVariable = program.call(refine, { summary, part }).updated;
    steps.push(updated);
    summary = updated;
  }
  t.not(await steps.at(-1)!.get({ criteria: "latency" }), "");
  const { calls } = await program.status();
  t.same(steps.map((s) => calls[s.call!]!.objective), ["latency", "latency", "latency"]);
  await program.close();
});

t.test("functions that exist only in code, beside the app's own", async (t) => {
  const assess = semanticFunction({
    name: "assess",
    template: "Name the risk in {{input:plan}}: {{output:risk}}\nIts severity from 1 to 5: {{output:severity}}",
    outputs: { risk: { maxTokens: 6 }, severity: { maxTokens: 4 } },
    policy: { type: "text", pieces: ["4"] },
  });
  const summarize = await client.function<"chunk", "summary">("summarize");
  t.same([summarize.inputs, summarize.outputs], [["chunk"], ["summary"]], "the app's function, read from the router");
  const program = client.program();
  const { summary: plan } = program.call(summarize, { chunk: "Ship the new warehouse system in spring." });
  const { risk, severity } = program.call(assess, { plan });
  t.equal(Number(await severity.get({ criteria: "latency" })), 4);
  t.equal(await risk.get(), "4");
  const { calls } = await program.status();
  t.same(new Set(Object.values(calls).map((c) => c.function)), new Set(["summarize", "assess"]));
  await program.close();
  // A bad definition is refused naming the field; it surfaces on the next get.
  const bad = client.program();
  const ramble = semanticFunction({ name: "ramble", template: "Ramble about {{input:topic}}: {{output:text}}", maxTokens: 100_000 });
  const { text } = bad.call(ramble, { topic: "cats" });
  const err = await text.get().catch((e: unknown) => e);
  t.ok(err instanceof InterlaceAPIError && err.status === 400 && /functions\[0\]\.outputs\[0\]\.maxTokens/.test(err.message), String(err));
  await bad.cancel();
});

t.test("an error rejects naming the failing call", async (t) => {
  const huge = Array.from({ length: 2400 }, (_, i) => `word${i}`).join(" ").slice(0, 15_000);
  const program = client.program();
  const { summary: first } = program.call(digest, { part: huge });
  const { summary: after } = program.call(digest, { part: first });
  const err = await after.get({ criteria: "latency" }).catch((e: unknown) => e);
  t.ok(err instanceof CallFailedError, String(err));
  t.match(err, { code: "dependency_failed", call: first.call, failedInput: first.name });
  const root = await first.get().catch((e: unknown) => e);
  t.match(root, { code: "context_overflow", call: first.call });
  t.match((root as Error).message, first.call!);
  await program.close();
});

t.test("cancel mid-program; the program is bound to its key", async (t) => {
  const waitFor = semanticFunction({
    name: "wait_for",
    template: "Wait for {{input:job}} to finish.\nStatus: {{output:status}}",
    maxTokens: 64,
    tools: ["sleep"],
    policy: { type: "lpt-dag", calls: [{ id: "w", tool: "sleep", arguments: { ms: 60_000 }, dependsOn: [] }], finalText: "done" },
  });
  const program = client.program();
  const { status } = program.call(waitFor, { job: "the nightly export" });
  const { updated: later } = program.call(refine, { summary: status, part: "more" });
  await t.rejects(status.get({ criteria: "latency", timeoutMs: 200 }), /not ready after 200 ms/, "asking for it starts the call");
  t.ok(await eventually(async () => (await program.status()).calls[status.call!]?.state === "running", 30_000), "the call is running");
  const id = await program.id;
  const forbidden = await fetch(`${url}/v1/apps/${APP}/programs/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${BOB_KEY}` } });
  t.equal(forbidden.status, 403, "another key may not cancel it");
  t.equal(await program.cancel(), true);
  for (const v of [status, later]) {
    const err = await v.get().catch((e: unknown) => e);
    t.ok(err instanceof ProgramCancelledError, String(err));
  }
  t.match(await program.status(), { state: "cancelled", calls: { [status.call!]: { state: "cancelled" } } });
  const events = [];
  for await (const e of program.events()) events.push(e);
  t.match(events.at(-1), { type: "done", state: "cancelled" });
  // Bob's program handles of Alice's program answer 403 too.
  const read = await fetch(`${url}/v1/apps/${APP}/variables/${encodeURIComponent(await status.id)}`, { headers: { authorization: `Bearer ${BOB_KEY}` } });
  t.equal(read.status, 403);
});

t.test("a session with a user interrupt and a cached tool output", async (t) => {
  const policy = {
    type: "lpt-dag",
    calls: [{ id: "slow", tool: "sleep", arguments: { ms: 60_000 }, dependsOn: [], estimatedLatencyMs: 60_000, afterInterrupt: "go" }],
    finalText: "ok",
  };
  const session = await client.session({ prompt: "Run the long job when I say go.", policy });
  const hijack = await fetch(`${url}/v1/apps/${APP}/sessions/${session.id}/interrupts`, {
    method: "POST",
    headers: { authorization: `Bearer ${BOB_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ value: "hijack" }),
  });
  t.equal(hijack.status, 403, "another key may not interrupt it");
  t.equal(await session.cacheToolOutput([{ name: "sleep", params: { ms: 60_000 }, output: "finished from the client's cache" }]), 1);
  const events: SessionEvent[] = [];
  for await (const e of session.events()) {
    events.push(e);
    if (e.type === "started") t.match(await session.interrupt("go", { id: "go" }), { id: "go", kind: "user", sessionId: session.id });
  }
  t.ok(events.some((e) => e.type === "interrupt" && e.kind === "user" && e.id === "go" && e.value === "go"), "the user interrupt was injected");
  const result = events.find((e) => e.type === "interrupt" && e.kind === "tool_result");
  t.match(result, { value: "finished from the client's cache" }, "the call was served from the tool cache (the one-minute tool never ran)");
  t.match(events.at(-1), { type: "done" });
});

t.test("the README's TypeScript examples run", async (t) => {
  const examples = readmeExamples("typescript");
  t.ok(examples.length >= 2, `${examples.length} examples found`);
  const dir = mkdtempSync(join(tmpdir(), "interlace-readme-ts-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const entry = pathToFileURL(join(ROOT, "clients/typescript/src/index.ts")).href;
  for (const [i, code] of examples.entries()) {
    const file = join(dir, `example-${i}.mts`); // ESM: the examples await at the top level
    // The examples import the package by name; here it is the checkout's source.
    writeFileSync(file, code.replaceAll(`"@interlace/client"`, JSON.stringify(entry)));
    const r = await run(process.execPath, ["--import", "tsx", file], { INTERLACE_URL: url, INTERLACE_API_KEY: ALICE_KEY });
    t.equal(r.code, 0, `example ${i}:\n${code}\n${r.out}`);
  }
});

t.test("the package builds: ESM with type declarations", async (t) => {
  const dist = join(ROOT, "clients/typescript/dist");
  t.teardown(() => rmSync(dist, { recursive: true, force: true }));
  const r = await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "clients/typescript/tsconfig.json")]);
  t.equal(r.code, 0, r.out);
  const built = (await import(pathToFileURL(join(dist, "index.js")).href)) as Record<string, unknown>;
  t.same(Object.keys(built).sort(), ["CallFailedError", "Interlace", "InterlaceAPIError", "Program", "ProgramCancelledError", "SemanticVariable", "Session", "appFunction", "semanticFunction"]);
});

t.test("nothing is left running on the engines", async (t) => {
  t.ok(await eventually(idle, 15_000), "every engine sequence is free");
});

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    child.once("exit", (code) => resolve({ code, out }));
  });
}

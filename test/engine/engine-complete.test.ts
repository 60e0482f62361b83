/**
 * @module Stateless completions (the OpenAI-compatible path and async-naive
 * clients) on real llama.cpp: a resident prefix is reused (only new tokens are
 * prefilled), a turn's call blocks come back as tool calls without running,
 * and a scripted policy picks up where a restarted request's history stops.
 */
import t from "tap";
import { startEngine, TOOLS } from "./engine-fixture.js";

const { engine, executor } = await startEngine(t, { sequences: 2 });

t.test("a resident prefix is reused: only the new tokens are prefilled", async (t) => {
  const first = await engine.complete({ messages: [{ role: "user", content: "what is the weather" }], tools: TOOLS, maxTokens: 8 });
  t.equal(first.finishReason, "length");
  t.equal(first.usage.completionTokens, 8);
  t.equal(first.usage.prefilledTokens, first.usage.promptTokens - first.usage.reusedPrefixTokens);
  const second = await engine.complete({
    messages: [
      { role: "user", content: "what is the weather" },
      { role: "assistant", content: first.raw },
      { role: "user", content: "and tomorrow" },
    ],
    tools: TOOLS,
    maxTokens: 8,
  });
  t.ok(second.usage.reusedPrefixTokens > first.usage.promptTokens / 2, `reused ${second.usage.reusedPrefixTokens} resident tokens`);
  t.equal(second.usage.prefilledTokens, second.usage.promptTokens - second.usage.reusedPrefixTokens, "prefilled only the rest");
  t.ok(second.usage.prefilledTokens < second.usage.promptTokens / 2);
});

t.test("a turn's call blocks come back as tool calls, not run", async (t) => {
  const before = executor.calls.length;
  const r = await engine.complete({
    messages: [{ role: "user", content: "call two tools" }],
    tools: TOOLS,
    policy: {
      type: "text",
      pieces: ['Sure. [CALL] c1 [HEAD] {"name": "echo", "arguments": {"text": "x"}} [END][CALL] c2 [HEAD] {"name": "wait", "arguments": {"ms": 5}} [END]'],
    },
  });
  t.equal(r.finishReason, "tool_calls");
  t.same(r.toolCalls, [
    { id: "c1", name: "echo", arguments: { text: "x" } },
    { id: "c2", name: "wait", arguments: { ms: 5 } },
  ]);
  t.equal(r.content.trim(), "Sure.");
  t.match(r.raw, /\[CALL\]/);
  t.equal(executor.calls.length, before, "the executor was not called");
});

t.test("async-naive restarts: the policy resumes from the history", async (t) => {
  const policy = {
    type: "lpt-dag" as const,
    calls: [
      { id: "a", tool: "wait", arguments: { ms: 30 }, dependsOn: [], estimatedLatencyMs: 30 },
      { id: "b", tool: "echo", arguments: { text: "b" }, dependsOn: [], estimatedLatencyMs: 1 },
      { id: "c", tool: "echo", arguments: { text: "c" }, dependsOn: ["a"], estimatedLatencyMs: 1 },
    ],
    finalText: " end",
  };
  const user = { role: "user" as const, content: "go" };
  let streamed = "";
  const r1 = await engine.complete({ messages: [user], tools: TOOLS, policy, stopAtCalls: "never", onText: (x) => (streamed += x) });
  t.equal(r1.finishReason, "trap", "stops at the trap: nothing is ready");
  t.same(r1.toolCalls.map((c) => c.id), ["a", "b"], "LPT: a then b");
  t.equal(streamed, r1.raw, "raw stream, markers included");
  // The client ran a (and b) and restarts with the results appended to the assistant's text.
  const history = `${r1.raw}[INTR] a [HEAD] waited 30 [END]`;
  const r2 = await engine.complete({
    messages: [user, { role: "assistant", content: history }],
    tools: TOOLS,
    policy,
    stopAtCalls: "never",
    continueAssistant: true,
  });
  t.same(r2.toolCalls.map((c) => c.id), ["c"], "c is ready now; a and b are not emitted again");
  t.equal(r2.finishReason, "trap", "b and c still pending");
  t.ok(r2.usage.reusedPrefixTokens > 0, "the first request's tokens were resident");
  const r3 = await engine.complete({
    messages: [user, { role: "assistant", content: `${history}${r2.raw}[INTR] b [HEAD] echo b [END][INTR] c [HEAD] echo c [END]` }],
    tools: TOOLS,
    policy,
    stopAtCalls: "never",
    continueAssistant: true,
  });
  t.equal(r3.finishReason, "stop");
  t.equal(r3.content, " end");
  t.equal(engine.stats().totalSequences, 2);
});

t.test("sync clients: tool messages (toolCallId) count as delivered results for a policy", async (t) => {
  const policy = {
    type: "lpt-dag" as const,
    calls: [
      { id: "a", tool: "echo", arguments: { text: "a" }, dependsOn: [] },
      { id: "b", tool: "echo", arguments: { text: "b" }, dependsOn: ["a"] },
    ],
    finalText: " all done",
  };
  const user = { role: "user" as const, content: "go" };
  const r1 = await engine.complete({ messages: [user], tools: TOOLS, policy });
  t.equal(r1.finishReason, "tool_calls");
  t.same(r1.toolCalls.map((c) => c.id), ["a"]);
  t.equal(r1.scripted, true);
  const r2 = await engine.complete({
    messages: [user, { role: "assistant", content: r1.raw }, { role: "tool", content: "echo a", toolCallId: "a" }],
    tools: TOOLS,
    policy,
  });
  t.same(r2.toolCalls.map((c) => c.id), ["b"], "a's result is in: b is next");
  const r3 = await engine.complete({
    messages: [
      user,
      { role: "assistant", content: r1.raw },
      { role: "tool", content: "echo a", toolCallId: "a" },
      { role: "assistant", content: r2.raw },
      { role: "tool", content: "echo b", toolCallId: "b" },
    ],
    tools: TOOLS,
    policy,
  });
  t.equal(r3.finishReason, "stop");
  t.equal(r3.content, " all done");
});

t.test("an aborted completion stays resident: the restarted request prefills only what is new", async (t) => {
  const messages = [{ role: "user" as const, content: "keep going until interrupted" }];
  const abort = new AbortController();
  let streamed = "";
  const pieces = Array.from({ length: 40 }, (_, i) => ` step ${i}`);
  await t.rejects(
    engine.complete({
      messages,
      tools: TOOLS,
      stopAtCalls: "never",
      policy: { type: "text", pieces },
      signal: abort.signal,
      onText: (text) => {
        streamed += text;
        if (streamed.length > 40) abort.abort();
      },
    }),
    "the aborted request ends without a result",
  );
  // Async-naive restart: same history, what was streamed, then an interrupt.
  const restarted = await engine.complete({
    messages: [...messages, { role: "assistant", content: `${streamed}[INTR] u1 [HEAD] new input [END]` }],
    tools: TOOLS,
    stopAtCalls: "never",
    continueAssistant: true,
    maxTokens: 2,
  });
  t.ok(restarted.usage.reusedPrefixTokens > restarted.usage.promptTokens * 0.8, `reused ${restarted.usage.reusedPrefixTokens} of ${restarted.usage.promptTokens} prompt tokens`);
  t.ok(restarted.usage.prefilledTokens < 40, `prefilled ${restarted.usage.prefilledTokens}: the streamed tail and the interrupt, not the history`);
});

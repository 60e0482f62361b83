/**
 * @module The OpenAI-compatible endpoint on a real engine (`test` model):
 * sync semantics with tool calls (stop at the turn's calls →
 * `finish_reason: "tool_calls"`), the tool-result round trip, streaming
 * (`chat.completion.chunk` frames, `[DONE]`) and not, and the async-naive
 * extensions (`interlace_raw_cml`, `interlace_continue`, `interlace_policy`).
 */
import t from "tap";
import { toChatMessages } from "../../engine-pod/src/server/index.js";
import { postJson, sseFrames, startTestPod } from "./helpers.js";
import { WEATHER_POLICY } from "../clients/weather-agent.js";

const { base } = await startTestPod(t);
const url = `${base}/v1/chat/completions`;

interface Completion {
  object: string;
  choices: { index: number; message: { role: string; content: string | null; tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[] }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  interlace: { finish_reason: string; scripted: boolean };
}
interface Chunk {
  object: string;
  choices: { delta: { role?: string; content?: string; tool_calls?: { index: number; id?: string; function: { name?: string; arguments?: string } }[] }; finish_reason: string | null }[];
  usage?: { completion_tokens: number };
}

const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, interlace_estimated_latency_ms: 800 } },
  { type: "function", function: { name: "get_time", description: "Time in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
];
const policy = WEATHER_POLICY;
const user = { role: "user", content: "Weather and time in Paris?" };

t.test("non-streaming: the turn's tool calls, then the answer after the results", async (t) => {
  const res = await postJson(url, { model: "m", messages: [user], tools, interlace_policy: policy, max_tokens: 200 });
  t.equal(res.status, 200);
  const first = (await res.json()) as Completion;
  t.equal(first.object, "chat.completion");
  const choice = first.choices[0]!;
  t.equal(choice.finish_reason, "tool_calls", "generation stops at the turn's calls");
  t.equal(choice.message.content, null);
  t.same(
    choice.message.tool_calls?.map((c) => [c.id, c.type, c.function.name, JSON.parse(c.function.arguments)]),
    [
      ["call_w", "function", "get_weather", { city: "Paris" }],
      ["call_t", "function", "get_time", { city: "Paris" }],
    ],
    "both calls, longest first, OpenAI shape",
  );
  t.equal(first.interlace.scripted, true, "a scripted completion says so");
  t.ok(first.usage.prompt_tokens > 0 && first.usage.completion_tokens > 0);
  t.equal(first.usage.total_tokens, first.usage.prompt_tokens + first.usage.completion_tokens);

  const second = (await (
    await postJson(url, {
      messages: [
        user,
        choice.message,
        { role: "tool", tool_call_id: "call_w", content: "sunny" },
        { role: "tool", tool_call_id: "call_t", content: "12:00" },
      ],
      tools,
      interlace_policy: policy,
      max_tokens: 200,
    })
  ).json()) as Completion;
  t.equal(second.choices[0]?.finish_reason, "stop");
  t.equal(second.choices[0]?.message.content, " It is sunny at noon.", "with every result in, the answer follows");
  t.notOk(second.choices[0]?.message.tool_calls, "no calls repeated");
});

t.test("streaming: chunks, tool_calls delta, finish reason, usage, [DONE]", async (t) => {
  const res = await postJson(url, { messages: [user], tools, interlace_policy: policy, stream: true, stream_options: { include_usage: true } });
  t.equal(res.status, 200);
  t.match(res.headers.get("content-type"), /text\/event-stream/);
  const frames: string[] = [];
  for await (const frame of sseFrames(res)) frames.push(frame.data);
  t.equal(frames[frames.length - 1], "[DONE]", "the stream ends with [DONE]");
  const chunks = frames.slice(0, -1).map((d) => JSON.parse(d) as Chunk);
  t.ok(chunks.every((c) => c.object === "chat.completion.chunk"));
  t.equal(chunks[0]?.choices[0]?.delta.role, "assistant", "the first chunk opens the assistant message");
  const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
  // Each call opens with its id and name, then its arguments arrive in pieces as the model writes them.
  t.same(calls.filter((c) => c.id !== undefined).map((c) => [c.index, c.id, c.function.name]), [
    [0, "call_w", "get_weather"],
    [1, "call_t", "get_time"],
  ]);
  for (const index of [0, 1]) {
    const pieces = calls.filter((c) => c.index === index).map((c) => c.function.arguments ?? "");
    t.ok(pieces.length > 2, `call ${index}: ${pieces.length} argument deltas`);
    t.same(JSON.parse(pieces.join("")), { city: "Paris" });
  }
  const finish = chunks.map((c) => c.choices[0]?.finish_reason).filter((r) => r !== null && r !== undefined);
  t.same(finish, ["tool_calls"], "one finish reason");
  const usage = chunks[chunks.length - 1];
  t.same(usage?.choices, [], "the usage chunk has no choices");
  t.ok((usage?.usage?.completion_tokens ?? 0) > 0);
});

t.test("streamed text equals the non-streamed text (greedy)", async (t) => {
  const body = { messages: [{ role: "user", content: "Say something." }], max_tokens: 24, temperature: 0 };
  const plain = (await (await postJson(url, body)).json()) as Completion;
  t.equal(plain.choices[0]?.finish_reason, "length");
  const res = await postJson(url, { ...body, stream: true });
  let text = "";
  let finish: string | null | undefined;
  for await (const frame of sseFrames(res)) {
    if (frame.data === "[DONE]") break;
    const chunk = JSON.parse(frame.data) as Chunk;
    text += chunk.choices[0]?.delta.content ?? "";
    finish ??= chunk.choices[0]?.finish_reason;
  }
  t.equal(text, plain.choices[0]?.message.content);
  t.equal(finish, "length");
});

t.test("async-naive extensions: raw CML out, continue the assistant message in", async (t) => {
  const raw = (await (await postJson(url, { messages: [user], tools, interlace_policy: policy, interlace_raw_cml: true, max_tokens: 200 })).json()) as Completion;
  const text = raw.choices[0]?.message.content ?? "";
  t.match(text, /\[CALL\]\s*call_w\s*\[HEAD\].*get_weather.*\[END\]/s, "raw CML text, calls inline");
  t.match(text, /\[CALL\]\s*call_t\s*\[HEAD\]/);
  t.notOk(raw.choices[0]?.message.tool_calls, "raw mode returns no tool_calls");
  t.equal(raw.interlace.finish_reason, "trap", "it stops at the trap: nothing to do until a result arrives");
  const continued = (await (
    await postJson(url, {
      messages: [user, { role: "assistant", content: `${text}[INTR]call_t[HEAD]12:00[END][INTR]call_w[HEAD]sunny[END]` }],
      tools,
      interlace_policy: policy,
      interlace_raw_cml: true,
      interlace_continue: true,
      max_tokens: 200,
    })
  ).json()) as Completion;
  t.equal(continued.choices[0]?.message.content, " It is sunny at noon.", "continuing after the results gives the answer");
});

t.test("bad completion requests → 400 with the reason", async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ messages: [] }, /"messages" must be a non-empty array/],
    [{ messages: [{ role: "robot", content: "x" }] }, /"messages\[0\]\.role" must be one of/],
    [{ messages: [user], tools: [{ type: "retrieval" }] }, /"tools\[0\]" must be/],
    [{ messages: [user], tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "wat" } } } } }] }, /not a valid JSON Schema/],
    [{ messages: [user], tool_choice: "required" }, /tool_choice/],
    [{ messages: [user, { role: "tool", content: "x" }] }, /tool_call_id/],
    [{ messages: [user], interlace_continue: true }, /last message to be the assistant's/],
    [{ messages: [user], n: 9 }, /"n" must be an integer in 1..8/],
    [{ messages: [user], tools, n: 2, interlace_policy: policy }, /"n" above 1/],
    [{ messages: [user], tools, tool_choice: { type: "function", function: { name: "nope" } } }, /names "nope"/],
    [{ messages: [user], tool_choice: { type: "function", name: "get_weather" } }, /"tool_choice" must be/],
    [{ messages: [user], top_logprobs: 2 }, /"top_logprobs" is only allowed when "logprobs" is true/],
    [{ messages: [user], logprobs: true, top_logprobs: 21 }, /"top_logprobs" must be an integer in 0..20/],
    [{ messages: [user], logit_bias: { "5": 10 } }, /"logit_bias" is not supported/],
    [{ messages: [user], frobnicate: 1 }, /"frobnicate" is not a parameter of chat completions/],
    [{ messages: [user], stop: ["a", "b", "c", "d", "e"] }, /"stop" must be/],
    [{ messages: [user], top_p: 0 }, /"top_p" must be a number in \(0, 1\]/],
    [{ messages: [user], presence_penalty: 2.5 }, /"presence_penalty" must be a number in -2..2/],
    [{ messages: [user], response_format: { type: "json_schema", json_schema: { name: "x", schema: { $ref: "#/$defs/a" } } } }, /"\$ref" #\/\$defs\/a does not name one of the schema's own \$defs/],
    [{ messages: [user], response_format: { type: "json_schema", json_schema: { name: "x", schema: { $defs: { n: { type: "object", properties: { next: { $ref: "#/$defs/n" } } } }, $ref: "#/$defs/n" } } } }, /is recursive/],
    [{ messages: [user], response_format: { type: "yaml" } }, /"response_format.type" must be/],
  ];
  for (const [body, message] of cases) {
    const res = await postJson(url, body);
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    const err = (await res.json()) as { error: { message: string; type: string } };
    t.match(err.error.message, message);
    t.equal(err.error.type, "invalid_request_error", "OpenAI error shape");
  }
});

t.test("a tool message keeps its raw content and call id (the prompt renderer writes the one [INTR] block)", async (t) => {
  const messages = toChatMessages([
    { role: "user", content: "weather?" },
    { role: "tool", tool_call_id: "call_w", content: "sunny" },
  ]);
  t.same(messages[1], { role: "tool", content: "sunny", toolCallId: "call_w" });
  t.notMatch(messages[1]!.content, /\[INTR\]/, "not wrapped here as well");
});

t.test("async-naive restart: a request aborted mid-stream leaves its prefix resident for the immediate restart", async (t) => {
  const pieces = Array.from({ length: 60 }, (_, i) => ` part ${i}`);
  const body = (assistant?: string) => ({
    messages: [user, ...(assistant !== undefined ? [{ role: "assistant", content: assistant }] : [])],
    tools,
    stream: true,
    interlace_raw_cml: true,
    ...(assistant !== undefined ? { interlace_continue: true } : {}),
    interlace_policy: { type: "text", pieces },
  });
  const abort = new AbortController();
  let streamed = "";
  const res = await postJson(url, body(), { signal: abort.signal });
  try {
    for await (const frame of sseFrames(res)) {
      if (frame.data === "[DONE]") break;
      streamed += (JSON.parse(frame.data) as Chunk).choices[0]?.delta.content ?? "";
      if (streamed.length > 60) abort.abort(); // an interrupt arrived: stop and restart
    }
  } catch {
    // the abort ends the stream
  }
  t.ok(abort.signal.aborted, "the first request was aborted mid-stream");
  // Restart at once, with what was streamed plus the interrupt.
  const restarted = await postJson(url, { ...body(`${streamed}[INTR] u1 [HEAD] more [END]`), stream: false, max_tokens: 2 });
  const json = (await restarted.json()) as Completion & { interlace: { prefilled_tokens: number; reused_prefix_tokens: number } };
  t.ok(json.interlace.reused_prefix_tokens > json.usage.prompt_tokens * 0.8, `reused ${json.interlace.reused_prefix_tokens} of ${json.usage.prompt_tokens}`);
});

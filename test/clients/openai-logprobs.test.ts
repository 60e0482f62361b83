/**
 * @module OpenAI `logprobs` through the official `openai` npm SDK, against a
 * real engine pod on the generated `test` model: chat completions
 * (`logprobs`, `top_logprobs`, streamed and not, `n`, `stop`, a forced call)
 * and Responses (`include: ["message.output_text.logprobs"]`), the 400s
 * OpenAI answers, and `--backend openai` relaying an upstream's logprobs
 * (the upstream being another engine pod).
 */
import OpenAI from "openai";
import type { ChatCompletionTokenLogprob } from "openai/resources/chat/completions";
import t, { type Test } from "tap";
import { createLogger } from "../../common/src/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { UpstreamEngine } from "../../engine-pod/src/upstream/index.js";
import { startTestPod } from "../server/helpers.js";

const { base } = await startTestPod(t);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0 });
const PROMPT = "Tell me about the weather in Paris.";
const messages = [{ role: "user" as const, content: PROMPT }];

interface Entry {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** The invariants every entry list keeps: texts and bytes add up to the content, logprobs ≤ 0, alternatives sorted and exactly `top`. */
function checkEntries(t: Test, entries: readonly Entry[], content: string, top: number): void {
  t.equal(entries.map((e) => e.token).join(""), content, "the tokens' texts concatenate to the content");
  t.same(
    entries.flatMap((e) => e.bytes ?? []),
    [...Buffer.from(content, "utf8")],
    "their bytes concatenate to the content's UTF-8",
  );
  for (const [i, e] of entries.entries()) {
    t.ok(e.logprob <= 0 && Number.isFinite(e.logprob), `token ${i}: logprob ${e.logprob} <= 0`);
    t.equal(e.top_logprobs.length, top, `token ${i}: ${top} alternatives`);
    const values = e.top_logprobs.map((a) => a.logprob);
    t.ok(
      values.every((v, k) => v <= 0 && (k === 0 || v <= values[k - 1]!)),
      `token ${i}: alternatives sorted, most likely first (${values.join(", ")})`,
    );
  }
}

t.test("chat completions at temperature 0: each token is its own top-1, and the texts add up to the content", async (t) => {
  const r = await client.chat.completions.create({ model: "m", messages, max_tokens: 40, temperature: 0, logprobs: true, top_logprobs: 5 });
  const choice = r.choices[0]!;
  const content = choice.message.content ?? "";
  t.ok(content.length > 0, "the model wrote something");
  const entries = choice.logprobs?.content ?? [];
  t.ok(entries.length > 0, `${entries.length} token entries`);
  t.equal(choice.logprobs?.refusal, null);
  checkEntries(t, entries, content, 5);
  for (const [i, e] of entries.entries()) {
    const best = e.top_logprobs[0]!;
    t.equal(e.logprob, best.logprob, `token ${i}: greedy picked the most likely token`);
    // Bytes that complete no character are held; the next token's text starts with them (U+FFFD where they never complete).
    if (!best.token.includes("\uFFFD") && e.token !== "") t.ok(e.token.endsWith(best.token), `token ${i}: ${JSON.stringify(e.token)} ends with the top-1's text ${JSON.stringify(best.token)}`);
  }
  t.ok(
    entries.some((e) => e.top_logprobs[1]!.logprob > -9999),
    "the alternatives are real probabilities, not the greedy sampler's one-hot",
  );
  const plain = await client.chat.completions.create({ model: "m", messages, max_tokens: 40, temperature: 0 });
  t.equal(plain.choices[0]?.message.content, content, "asking for logprobs does not change the greedy output");
  t.equal(plain.choices[0]?.logprobs, null, "not asked for: null, as OpenAI writes it");
  const none = await client.chat.completions.create({ model: "m", messages, max_tokens: 10, temperature: 0, logprobs: true });
  t.ok((none.choices[0]?.logprobs?.content ?? []).every((e) => e.top_logprobs.length === 0), "no top_logprobs: empty alternatives");
});

t.test("streamed and non-streamed agree, chunk by chunk", async (t) => {
  for (const temperature of [0, 0.9]) {
    const request = { model: "m", messages, max_tokens: 40, temperature, seed: 7, logprobs: true, top_logprobs: 3 } as const;
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true });
    const streamed: ChatCompletionTokenLogprob[] = [];
    let text = "";
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c === undefined) continue;
      const delta = c.delta.content ?? "";
      text += delta;
      streamed.push(...(c.logprobs?.content ?? []));
      // A token's entry comes with the chunk that completes its text, never before.
      if (!text.startsWith(streamed.map((e) => e.token).join(""))) t.fail(`tokens ahead of the text: ${JSON.stringify(text)}`);
    }
    const content = whole.choices[0]?.message.content ?? "";
    t.equal(text, content, `temperature ${temperature}: the same text`);
    t.same(streamed, whole.choices[0]?.logprobs?.content, `temperature ${temperature}: the same token entries`);
    checkEntries(t, streamed, text, 3);
  }
});

t.test("the temperature is divided back out: the first token's alternatives are the same at any temperature", async (t) => {
  const at = async (temperature: number) =>
    (await client.chat.completions.create({ model: "m", messages, max_tokens: 1, temperature, seed: 1, logprobs: true, top_logprobs: 4 })).choices[0]?.logprobs?.content?.[0]?.top_logprobs ?? [];
  const greedy = await at(0);
  t.equal(greedy.length, 4);
  for (const temperature of [0.5, 1.5]) {
    const warm = await at(temperature);
    t.same(
      warm.map((a) => a.token),
      greedy.map((a) => a.token),
      `temperature ${temperature}: the same alternatives`,
    );
    warm.forEach((a, i) => t.ok(Math.abs(a.logprob - greedy[i]!.logprob) < 1e-3, `temperature ${temperature}: ${a.logprob} ≈ ${greedy[i]!.logprob}`));
  }
});

t.test("n = 2: each choice has its own tokens; a stop sequence cuts them with the text", async (t) => {
  const r = await client.chat.completions.create({ model: "m", messages, max_tokens: 30, temperature: 1, seed: 11, n: 2, logprobs: true, top_logprobs: 2 });
  t.equal(r.choices.length, 2);
  for (const c of r.choices) checkEntries(t, c.logprobs?.content ?? [], c.message.content ?? "", 2);
  t.not(r.choices[0]?.message.content, r.choices[1]?.message.content, "two samples");

  const full = await client.chat.completions.create({ model: "m", messages, max_tokens: 40, temperature: 0, logprobs: true });
  const text = full.choices[0]?.message.content ?? "";
  const stop = text.slice(12, 15);
  const cut = await client.chat.completions.create({ model: "m", messages, max_tokens: 40, temperature: 0, logprobs: true, stop: [stop] });
  const content = cut.choices[0]?.message.content ?? "";
  t.equal(content, text.slice(0, text.indexOf(stop)), "the content ends before the stop sequence");
  checkEntries(t, cut.choices[0]?.logprobs?.content ?? [], content, 0);
  t.ok((cut.choices[0]?.logprobs?.content?.length ?? 0) < (full.choices[0]?.logprobs?.content?.length ?? 0), "the tokens after it are gone");
});

t.test("a forced tool call: its tokens carry no logprobs", async (t) => {
  const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"] } } }];
  const r = await client.chat.completions.create({ model: "m", messages, tools, tool_choice: "required", max_tokens: 120, temperature: 0, logprobs: true, top_logprobs: 2 });
  const c = r.choices[0]!;
  t.equal(c.finish_reason, "tool_calls");
  const call = c.message.tool_calls?.[0];
  t.ok(call?.type === "function" && call.function.arguments.length > 2, "a call with arguments");
  const entries = c.logprobs?.content ?? [];
  checkEntries(t, entries, c.message.content ?? "", 2);
  const texts = entries.map((e) => e.token).join("");
  t.notOk(call?.type === "function" && texts.includes(call.function.arguments), "content tokens only: the call's arguments have none");
});

t.test("requests OpenAI refuses are 400s naming the field", async (t) => {
  const refused = async (body: Record<string, unknown>, path: string, message: RegExp): Promise<void> => {
    const err = await (path === "chat" ? client.chat.completions.create({ model: "m", messages, ...body } as never) : client.responses.create({ model: "m", input: "hi", ...body } as never)).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof OpenAI.BadRequestError, `${JSON.stringify(body)}: a 400`);
    t.match((err as Error).message, message);
  };
  await refused({ top_logprobs: 3 }, "chat", /"top_logprobs" is only allowed when "logprobs" is true/);
  await refused({ logprobs: false, top_logprobs: 0 }, "chat", /"top_logprobs" is only allowed/);
  await refused({ logprobs: true, top_logprobs: 21 }, "chat", /"top_logprobs" must be an integer in 0..20/);
  await refused({ logprobs: "yes" }, "chat", /"logprobs" must be boolean/);
  await refused({ logprobs: true, interlace_raw_cml: true }, "chat", /"logprobs" covers the content tokens/);
  await refused({ include: ["file_search_call.results"] }, "responses", /"include" value "file_search_call.results" is not supported/);
  await refused({ top_logprobs: 1.5 }, "responses", /"top_logprobs" must be integer/);
  const plain = await client.chat.completions.create({ model: "m", messages, max_tokens: 3, logprobs: false });
  t.equal(plain.choices[0]?.logprobs, null, "logprobs: false asks for nothing");
});

t.test("Responses: include message.output_text.logprobs, streamed and not", async (t) => {
  const request = { model: "m", input: PROMPT, max_output_tokens: 40, temperature: 0, include: ["message.output_text.logprobs" as const], top_logprobs: 3 };
  const r = await client.responses.create(request);
  const part = r.output.flatMap((item) => (item.type === "message" ? item.content : [])).find((p) => p.type === "output_text");
  t.ok(part !== undefined && part.type === "output_text");
  if (part?.type !== "output_text") return;
  const entries = (part.logprobs ?? []) as Entry[];
  t.ok(entries.length > 0);
  checkEntries(t, entries, part.text, 3);
  for (const e of entries) t.equal(e.logprob, e.top_logprobs[0]!.logprob, "greedy: the top-1");

  const stream = await client.responses.create({ ...request, stream: true });
  const streamed: Entry[] = [];
  let done: Entry[] | undefined;
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") streamed.push(...(event.logprobs as Entry[]));
    if (event.type === "response.output_text.done") done = event.logprobs as Entry[];
  }
  t.same(streamed, entries, "the deltas' tokens are the response's");
  t.same(done, entries, "output_text.done lists them all");

  const plain = await client.responses.create({ model: "m", input: "hi", max_output_tokens: 5 });
  const plainPart = plain.output.flatMap((item) => (item.type === "message" ? item.content : []))[0];
  t.same(plainPart?.type === "output_text" ? plainPart.logprobs : undefined, [], "not asked for: empty");
});

t.test("--backend openai relays the upstream's logprobs", async (t) => {
  const upstream = new UpstreamEngine(
    { upstream: { url: `${base}/v1`, model: "m", timeoutMs: 120_000, retries: 0 }, maxSessions: 2, maxTokens: 64, contextSize: 2048 },
    new InProcessExecutor(),
    createLogger("upstream-logprobs", "silent"),
  );
  t.teardown(() => upstream.close());
  const streamed: string[] = [];
  const result = await upstream.complete({
    messages: [{ role: "user", content: PROMPT }],
    tools: [],
    maxTokens: 30,
    temperature: 0,
    logprobs: { top: 2 },
    onText: (_text, entries) => streamed.push(...(entries ?? []).map((e) => e.token)),
  });
  const direct = await client.chat.completions.create({ model: "m", messages, max_tokens: 30, temperature: 0, logprobs: true, top_logprobs: 2 });
  t.equal(result.content, direct.choices[0]?.message.content);
  t.same(
    result.logprobs?.map((e) => ({ token: e.token, logprob: e.logprob, bytes: e.bytes, top_logprobs: e.topLogprobs })),
    direct.choices[0]?.logprobs?.content,
    "the upstream's entries, as it sent them",
  );
  t.equal(streamed.join(""), result.content, "relayed with the text deltas");
});

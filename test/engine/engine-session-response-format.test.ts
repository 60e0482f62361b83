/**
 * @module A session's `responseFormat` on the engine (real llama.cpp, the
 * generated `test` model): in async, sync and syncParallel mode, after a tool
 * call and its result, the `done` event's answer is one JSON value that
 * validates against a nested schema (local `$ref`s included); an interrupt
 * that arrives while the answer is being written waits for its end (the
 * model then answers again, and the last answer is the final one); a bad
 * format is refused. The model's random weights never write JSON of their
 * own, and with `[CALL]` pushed down they call only when the first call is
 * forced (`toolChoice`), so each session calls once, then answers.
 */
import t, { type Test } from "tap";
import type { Token } from "node-llama-cpp";
import { CML, CML_MARKERS, type CallingMode, type CreateSessionRequest, type JsonSchema, type SessionEvent } from "../../common/src/index.js";
import { compileSchema } from "../../common/src/wire/validator.js";
import { SPECIAL_TOKEN_IDS } from "../../engine-pod/src/model/index.js";
import { eventsOf, startEngine, TOOLS } from "./engine-fixture.js";

const callToken = (SPECIAL_TOKEN_IDS.cmlFirst + CML_MARKERS.indexOf(CML.CALL)) as Token;
// A model that never opens a call block of its own: its one call is the forced first one.
const { engine } = await startEngine(t, { sequences: 2 }, { extraLogitBias: new Map([[callToken, -40]]) });

/** A nested schema written as pydantic writes it: the day objects behind a `$ref`. */
const FORECAST: JsonSchema = {
  $defs: {
    day: { type: "object", properties: { day: { enum: ["mon", "tue", "wed"] }, high: { type: "integer" }, rain: { type: "boolean" } }, required: ["day", "high"] },
  },
  type: "object",
  properties: {
    city: { type: "string", maxLength: 12 },
    days: { type: "array", maxItems: 3, items: { $ref: "#/$defs/day" } },
    note: { anyOf: [{ type: "string", maxLength: 6 }, { type: "null" }] },
  },
  required: ["city", "days", "note"],
};
// ajv (the project's one validator) reads the `$ref` itself: the answer is checked against the schema as the client wrote it.
const validForecast = compileSchema<unknown>(FORECAST, "answer");
const responseFormat = { type: "json_schema", json_schema: { name: "forecast", schema: FORECAST, strict: true } } as const;

const session = (mode: CallingMode, seed: number): CreateSessionRequest => ({
  prompt: "the forecast for Oslo",
  tools: TOOLS,
  mode,
  toolChoice: { name: "echo" },
  responseFormat,
  temperature: 1,
  seed,
  maxTokens: 400,
});

/** The answer parses as JSON and validates against the schema. */
function checkAnswer(t: Test, answer: string | undefined, what: string): void {
  let parsed: unknown;
  t.doesNotThrow(() => (parsed = JSON.parse(answer ?? "")), `${what}: the answer is JSON: ${answer}`);
  const checked = validForecast(parsed);
  t.ok(checked.ok, checked.ok ? `${what}: validates against the schema` : `${what}: ${checked.error}`);
}

for (const mode of ["async", "sync", "syncParallel"] as const) {
  t.test(`${mode}: a call, its result, then an answer that validates against the nested schema`, async (t) => {
    for (const seed of [1, 2, 3]) {
      const s = engine.createSession(session(mode, seed));
      const done = await s.finished;
      const what = `${mode} seed ${seed}`;
      t.equal(done.reason, "eos", `${what}: ended on its own`);
      const calls = eventsOf(s.events, "call");
      t.ok(calls.length >= 1 && calls[0]?.tool === "echo", `${what}: called echo first (${calls.length} call(s))`);
      checkAnswer(t, done.answer, what);
      // The answer reads the result: no text but whitespace before the last interrupt.
      const lastResult = s.events.findLastIndex((e) => e.type === "interrupt");
      t.ok(lastResult > s.events.indexOf(calls[0]!), `${what}: the result was read`);
      const before = s.events.slice(0, lastResult).filter((e): e is Extract<SessionEvent, { type: "text" }> => e.type === "text");
      t.equal(before.map((e) => e.text).join("").trim(), "", `${what}: nothing of the answer before the result`);
      t.equal(
        s.events
          .filter((e) => e.type === "text")
          .map((e) => (e.type === "text" ? e.text : ""))
          .join("")
          .trim(),
        done.answer,
        `${what}: the streamed text is the answer`,
      );
    }
  });
}

t.test("async: an interrupt arriving mid-answer waits for the answer's end; the model then answers again", async (t) => {
  for (const seed of [1, 2]) {
    const s = engine.createSession(session("async", seed));
    let sent = false;
    s.subscribe((e) => {
      if (sent || e.type !== "text") return;
      // After the tool's result, the answer's first characters: the answer has begun.
      const afterResult = s.events.some((x) => x.type === "interrupt");
      if (afterResult && e.text.trim() !== "") {
        sent = true;
        t.ok(engine.interrupt(s.id, { id: "user_more", kind: "user", value: "Also say whether to bring an umbrella." }), "queued");
      }
    });
    const done = await s.finished;
    t.ok(sent, `seed ${seed}: the interrupt was sent mid-answer`);
    const at = s.events.findIndex((e) => e.type === "interrupt" && e.id === "user_more");
    const user = s.events[at];
    t.ok(user?.type === "interrupt" && user.deferred === true, `seed ${seed}: held back while the answer was written`);
    // The first answer is whole: everything the model wrote between the tool result and the user interrupt.
    const result = s.events.findIndex((e) => e.type === "interrupt" && e.kind === "tool_result");
    const firstAnswer = s.events
      .slice(result + 1, at)
      .map((e) => (e.type === "text" ? e.text : ""))
      .join("");
    checkAnswer(t, firstAnswer.trim(), `seed ${seed}, the answer the interrupt waited for`);
    t.equal(done.reason, "eos");
    t.ok(s.events.slice(at).some((e) => e.type === "text" && e.text.trim() !== ""), `seed ${seed}: the model answered again after reading it`);
    checkAnswer(t, done.answer, `seed ${seed}, the final answer`);
  }
});

t.test("without tools: the whole text is the answer; type text is free text", async (t) => {
  const s = engine.createSession({ prompt: "anything", responseFormat, temperature: 1, seed: 7, maxTokens: 300 });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  checkAnswer(t, done.answer, "no tools");
  const free = await engine.createSession({ prompt: "anything", responseFormat: { type: "text" }, temperature: 1, seed: 7, maxTokens: 60 }).finished;
  t.throws(() => JSON.parse(free.answer ?? ""), "type text: free text, as without a format");
});

t.test("a bad response format is a bad_request naming it", async (t) => {
  const bad = (responseFormat: unknown, extra: Partial<CreateSessionRequest> = {}) => () =>
    engine.createSession({ prompt: "x", tools: TOOLS, ...extra, responseFormat: responseFormat as NonNullable<CreateSessionRequest["responseFormat"]> });
  t.throws(bad({ type: "json_schema", json_schema: { name: "x", schema: { $ref: "#/$defs/nope" } } }), /responseFormat\.json_schema\.schema.*does not name one of the schema's own \$defs/);
  t.throws(bad({ type: "json_schema", json_schema: { name: "x", schema: { $defs: { n: { type: "object", properties: { next: { $ref: "#/$defs/n" } } } }, $ref: "#/$defs/n" } } }), /is recursive/);
  t.throws(bad({ type: "json_schema", json_schema: { name: "x", schema: "an object" } }), /responseFormat.*json_schema.*schema/);
  t.throws(bad({ type: "xml" }), /responseFormat.*type/);
  t.throws(bad({ type: "json_object" }, { policy: { type: "text", pieces: ["{}"] } }), /scripted/);
});

/**
 * Sessions run back to back on one real engine (llama.cpp on the generated
 * `bench` model: cl100k byte-level BPE, so a Korean character spans several
 * tokens), with scripted calls whose arguments are multi-byte, long English
 * with an apostrophe, and quoted with backslashes — the BFCL
 * live_parallel_multiple tasks that seemed to lose a call depending on what
 * ran before. In async, sync and syncParallel, every task runs once after the
 * others and once before them (the list forward, then reversed), with two
 * sequences so admissions reuse idle sequences' cells (the prefix cache):
 * every call is dispatched with its exact arguments every time. A call whose
 * argument is outside the tool's enum (BFCL's answer key for
 * live_parallel_multiple_2-2-0) is refused with the reason, as a
 * `call_error` the model reads — never silently dropped.
 */
import t from "tap";
import { createLogger, type ScriptedCall, type ToolSpec } from "../../common/src/index.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import type { Executor, ToolCall, ToolResult } from "../../engine-pod/src/executor/executor.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { eventsOf } from "./engine-fixture.js";

const COMMANDS = ["거실, 에어컨, 실행", ", 에어컨, 냉방 실행", "다용도실, 통돌이, 중지"];
const TOOLS: ToolSpec[] = [
  {
    name: "ControlAppliance.execute",
    description: "Controls a home appliance; the command is Korean: room, appliance, operation.",
    parameters: { type: "object", properties: { command: { type: "string", enum: COMMANDS } }, required: ["command"] },
    estimatedLatencyMs: 5,
  },
  {
    name: "OpenWeatherMap.get_current_weather",
    description: "Current weather of a city.",
    parameters: { type: "object", properties: { location: { type: "string" }, units: { type: "string", enum: ["metric", "imperial"] } }, required: ["location"] },
    estimatedLatencyMs: 5,
  },
  {
    name: "generate_image",
    description: "Generates an image from a text prompt.",
    parameters: { type: "object", properties: { prompt: { type: "string" }, image_quality: { type: "integer" } }, required: ["prompt"] },
    estimatedLatencyMs: 5,
  },
  {
    name: "echo",
    description: "Returns its text.",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    estimatedLatencyMs: 5,
  },
];

interface Task {
  name: string;
  prompt: string;
  calls: Omit<ScriptedCall, "dependsOn" | "estimatedLatencyMs">[];
  /** Calls the engine must refuse, with what the reason says. */
  refused?: Record<string, RegExp>;
}

const MUCHA = "a digital painting of a masked woman with bright peacock feathers, complex and elegant, with green highlighted lines and complex patterns, reminiscent of cyberpunk Alphonse Mucha's style.";
const TASKS: Task[] = [
  {
    name: "Korean beside English",
    prompt: "Can you tell me the weather in Seoul, South Korea using Celsius units? Also, turn on the air conditioner in the living room.",
    calls: [
      { id: "w", tool: "OpenWeatherMap.get_current_weather", arguments: { location: "Seoul, South Korea", units: "metric" } },
      { id: "ac", tool: "ControlAppliance.execute", arguments: { command: COMMANDS[0] } },
    ],
  },
  {
    name: "two Korean commands",
    prompt: "다용도실 통돌이 중지하고, 에어컨 냉방 실행해줘.",
    calls: [
      { id: "k1", tool: "ControlAppliance.execute", arguments: { command: COMMANDS[2] } },
      { id: "k2", tool: "ControlAppliance.execute", arguments: { command: COMMANDS[1] } },
    ],
  },
  {
    name: "a long English string with an apostrophe",
    prompt: "Paint me something in Mucha's style, and say it back.",
    calls: [
      { id: "img", tool: "generate_image", arguments: { prompt: MUCHA, image_quality: 90 } },
      { id: "say", tool: "echo", arguments: { text: "It's done: \"Mucha's\" peacock \\ 孔雀 🦚" } },
    ],
  },
  {
    name: "an answer outside the enum",
    prompt: "거실, 에어컨, 실행하고, 침실, 공기청정기, 중지해줘.",
    calls: [
      { id: "on", tool: "ControlAppliance.execute", arguments: { command: COMMANDS[0] } },
      { id: "off", tool: "ControlAppliance.execute", arguments: { command: "침실, 공기청정기, 중지" } },
    ],
    refused: { off: /invalid_arguments: "command" must be one of "거실, 에어컨, 실행"/ },
  },
];

class EchoExecutor implements Executor {
  readonly calls: ToolCall[] = [];
  async execute(call: ToolCall): Promise<ToolResult> {
    this.calls.push(call);
    return { callId: call.id, ok: true, output: `done ${JSON.stringify(call.arguments)}` };
  }
  async close(): Promise<void> {}
}

// Six runs of every task on the bench model: minutes on a loaded 2-core machine.
t.setTimeout(900_000);

t.test("back-to-back sessions dispatch every call of multi-byte and quoted tasks, whatever ran before", async (t) => {
  const executor = new EchoExecutor();
  const engine = await createEngine(
    { modelPath: await ensureModel({ preset: "bench" }), gpu: false, sequences: 2, contextSize: 4096, threads: 1, kvPolicy: "auto", maxTokens: 600, prefixCache: true },
    executor,
    createLogger("engine-test", "warn"),
    { calibrate: false },
  );
  t.teardown(() => engine.close());
  const order = [...TASKS, ...[...TASKS].reverse()];
  for (const mode of ["async", "sync", "syncParallel"] as const) {
    for (const [i, task] of order.entries()) {
      const style = i % 2 === 0 ? "python" : "json";
      const label = `${mode} #${i + 1} ${task.name} (${style})`;
      const before = executor.calls.length;
      const s = engine.createSession({
        prompt: task.prompt,
        tools: TOOLS,
        mode,
        temperature: 0,
        policy: { type: "lpt-dag", callStyle: style, finalText: " 끝.", calls: task.calls.map((c) => ({ ...c, dependsOn: [], estimatedLatencyMs: 5 })) },
      });
      const done = await s.finished;
      t.equal(done.reason, "eos", `${label}: ends normally`);
      const refused = task.refused ?? {};
      const expected = task.calls.filter((c) => refused[c.id] === undefined).map((c) => [c.id, c.tool, c.arguments]);
      const sort = (xs: unknown[][]): unknown[][] => xs.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
      t.same(sort(eventsOf(s.events, "call").map((c) => [c.callId, c.tool, c.arguments])), sort(expected), `${label}: every valid call dispatched, exact arguments`);
      t.same(sort(executor.calls.slice(before).map((c) => [c.id, c.tool, c.arguments])), sort(expected), `${label}: the executor got them exactly`);
      const errors = eventsOf(s.events, "call_error");
      t.same(errors.map((e) => e.callId).sort(), Object.keys(refused).sort(), `${label}: only the out-of-enum call is refused`);
      for (const e of errors) t.match(e.message, refused[e.callId]!, `${label}: the refusal says why`);
      t.same(eventsOf(s.events, "interrupt").map((e) => e.id).sort(), task.calls.map((c) => c.id).sort(), `${label}: every result or error is read back`);
    }
  }
});

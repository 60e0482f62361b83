import t from "tap";
import Ajv2020 from "ajv/dist/2020.js";
import { createToolSet } from "../../toolrunner/src/implementations/index.js";
import { toolRunnerConfigSchema, type ToolRunnerConfig } from "../../common/src/protocol/index.js";

const config: ToolRunnerConfig = {
  namespace: "bench",
  pool: "bfcl",
  tools: [
    {
      name: "spotify.play",
      description: "recorded",
      parameters: { type: "object" },
      implementation: {
        type: "builtin",
        builtin: "replay",
        recordings: [
          { arguments: { artist: "Taylor Swift", duration: 20 }, output: "playing", latencyMs: 30 },
          { arguments: { duration: 15, artist: "Maroon 5" }, output: "boom", latencyMs: 0, failed: true },
        ],
      },
    },
  ],
};

const ctx = () => ({ signal: new AbortController().signal, callId: "c", sessionId: "s", idempotencyKey: "k", idempotent: true });

t.test("a spec file with recordings is valid against the runner's schema", async (t) => {
  const validate = new Ajv2020.default({ strict: false }).compile(toolRunnerConfigSchema);
  t.ok(validate(config), JSON.stringify(validate.errors));
  const bad = structuredClone(config);
  (bad.tools[0]!.implementation as { recordings: unknown[] }).recordings.push({ arguments: {}, latencyMs: -1 });
  t.notOk(validate(bad), "a recording without output or with a negative latency is rejected");
});

t.test("replay plays a recorded tool by its arguments, in any key order", async (t) => {
  const set = createToolSet(config, 0);
  const tool = set.tools.get("spotify.play")!;
  const started = performance.now();
  t.equal(await tool.impl.run({ duration: 20, artist: "Taylor Swift" }, ctx()), "playing");
  t.ok(performance.now() - started >= 25, "waits the recorded latency");
  await t.rejects(tool.impl.run({ artist: "Maroon 5", duration: 15 }, ctx()), /boom/, "a recorded failure fails");
  await t.rejects(tool.impl.run({ artist: "Nobody" }, ctx()), /no recording for arguments/);
  await set.close();
});

t.test("a fallback plays for arguments no recording has (a model choosing its own arguments)", async (t) => {
  const withFallback = structuredClone(config);
  (withFallback.tools[0]!.implementation as { fallback?: unknown }).fallback = { output: "played anyway", latencyMs: 5 };
  const validate = new Ajv2020.default({ strict: false }).compile(toolRunnerConfigSchema);
  t.ok(validate(withFallback), JSON.stringify(validate.errors));
  const set = createToolSet(withFallback, 0);
  const tool = set.tools.get("spotify.play")!;
  t.equal(await tool.impl.run({ artist: "Nobody" }, ctx()), "played anyway");
  t.equal(await tool.impl.run({ duration: 20, artist: "Taylor Swift" }, ctx()), "playing", "a recording still wins");
  await set.close();
});

t.test("recordings on a builtin other than replay are a configuration error", async (t) => {
  const wrong = structuredClone(config);
  (wrong.tools[0]!.implementation as { builtin: string }).builtin = "echo";
  t.throws(() => createToolSet(wrong, 0), /recordings are for the "replay" builtin/);
});

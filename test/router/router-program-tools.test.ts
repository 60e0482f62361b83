/**
 * A program whose semantic function uses the app's tools, through the router,
 * on a real engine process of the `test` model (`--executor nats`) with a real
 * nats-server and a real tool runner process (what a ToolPool pod runs): the
 * function's session carries the app's tools in its calling mode, its call
 * goes through NATS to the runner, which runs it once, and the result is
 * injected into the session before the value is generated. The call is
 * scripted (a call's `policy`, as a session's) because the generated model's
 * weights are random.
 */
import t from "tap";
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { BUILTIN_TOOLS, spawnRunner } from "../nats/fixtures.js";
import { appConfig, postJson, startStack } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(240_000);

const TOOL_POOL = { namespace: "default", name: "tools" };
const echo = BUILTIN_TOOLS.find((x) => x.name === "echo")!;
const FUNCTIONS: SemanticFunction[] = [
  {
    name: "lookup",
    template: "Look the code up with the echo tool, then answer.\n\nCode: {{input:code}}\n\nAnswer: {{output:answer}}",
    outputs: [{ name: "answer", maxTokens: 64, temperature: 0 }],
    tools: true,
  },
];

const stack = await startStack(t, { engines: 1, routers: 1, engineArgs: ["--executor", "nats"] });
const runner = await spawnRunner(t, stack.nats.url, { namespace: TOOL_POOL.namespace, pool: TOOL_POOL.name, tools: [echo], concurrency: 4 }, "runner-0");
await stack.putApp(
  appConfig("lookups", {
    tools: [{ name: echo.name, description: "Echoes text back.", parameters: echo.parameters, pool: TOOL_POOL }],
    callingMode: "async",
    semanticFunctions: FUNCTIONS,
  }),
);
const base = `${stack.url(0)}/v1/apps/default/lookups`;
const engineUrl = [...stack.engines.values()][0]!.url;

async function engineMetric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${engineUrl}/metrics`)).text();
  return Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, "m").exec(text)?.[1] ?? "0");
}

t.test("a function's tool call goes through the ToolPool's runner and its result reaches the session", async (t) => {
  const res = await postJson(`${base}/programs`, {
    inputs: { code: "K-42" },
    calls: [
      {
        id: "ask",
        function: "lookup",
        outputs: { answer: "answer" },
        // Call echo, wait (trap) until its result is injected, then answer.
        policy: { type: "lpt-dag", calls: [{ id: "e1", tool: "echo", arguments: { text: "K-42 is the blue door" }, dependsOn: [] }], finalText: "The blue door." },
      },
    ],
    outputs: { answer: "latency" },
  });
  t.equal(res.status, 201, await res.clone().text());
  const program = (await res.json()) as { url: string; variables: Record<string, { url: string }> };
  const got = await fetch(`${stack.url(0)}${program.variables["answer"]!.url}?timeoutMs=60000`);
  const answer = (await got.json()) as { state: string; value?: string; error?: unknown };
  t.match(answer, { state: "ready", value: "The blue door." }, `the value is the text generated after the result came back: ${JSON.stringify(answer)}`);

  // Without the app's tools on the function's session the engine rejects the scripted call
  // (unknown tool); with them, the call went to NATS and exactly one runner run answered it.
  t.ok(await eventually(async () => (await runner.metric("interlace_toolrunner_calls_total")) === 1, 5_000), "the runner ran the call once");
  t.equal(await engineMetric("interlace_engine_tool_calls_total", 'tool="echo",outcome="ok"'), 1, "the engine saw one ok result of echo");
  t.equal(await engineMetric("interlace_engine_injection_delay_seconds_count", 'kind="tool_result"'), 1, "the result was injected into the function's session");
  const status = (await (await fetch(`${stack.url(0)}${program.url}`)).json()) as { state: string };
  t.equal(status.state, "succeeded");
});

/**
 * @module The local demo (`bash hack/demo.sh`, the README's main command): a
 * local stack serving the sample AgentApp (`samples/`) — nats-server, the
 * sample ToolPool's tool runner, an engine process on a generated model
 * (`bench`, or `test` with `--quick`) heartbeating into NATS, and the router
 * serving the app's endpoint, with the app rendered by the operator's own
 * code (hack/app-stack.ts). It opens a sample async session at
 * `/v1/apps/default/assistant/sessions`, prints its event stream (calls
 * dispatched, interrupts injected and their delays, trap decisions) and a
 * timing summary, runs the same workload in `sync` mode for comparison, and
 * shuts everything down. `--in-process-tools` skips NATS and the router: one
 * engine in this process with its tools inside it.
 *
 * The sample session is SCRIPTED: an LPT oracle over a known call DAG picks
 * which call the model emits next (the AsyncLM paper's "cheat sheet"), since
 * a random-weight model has nothing sensible to say; every token is still a
 * real llama.cpp forward pass and every call, interrupt and trap goes
 * through the real engine. `--free` adds a free-running (unscripted)
 * session on a real model, Gemma 3 270M, when hack/tools/50-gemma.sh has
 * fetched it, wearing the repository's CML adapter when it is there: the
 * model decides its own calls, through the router and NATS to the sample
 * `assistant-cml` app; it prints which model decided the calls.
 *
 * Structure: {@link bringUp} starts the in-process stack as a list of
 * components, each with its own stop (stopped in reverse order).
 */
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { createLogger, parseArgv, SessionClient, type CreateSessionRequest, type SessionEvent, type ToolSpec } from "../common/src/index.js";
import { builtinToolSpecs } from "../common/src/builtin-tools/index.js";
import { parseEnginePodOptions } from "../engine-pod/src/config.js";
import { startEnginePod } from "../engine-pod/src/main.js";
import { spawnEngine } from "./engine-process.js";
import { startAppStack } from "./app-stack.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER } from "./real-models.js";
import { engineNatsFlags, inPool, startToolStack } from "./stack.js";

export interface DemoOptions {
  preset: "test" | "bench";
  child: boolean;
  free: boolean;
  compareSync: boolean;
  inProcessTools: boolean;
}

/** One running piece of the demo stack. */
export interface Component {
  name: string;
  stop(): Promise<void>;
}

export interface Stack {
  url: string;
  components: Component[];
  /** The ToolPool the engine routes tools to over NATS (absent: in-process tools). */
  toolPool?: { namespace: string; name: string };
}

function parseDemoOptions(argv: string[]): DemoOptions {
  const flags = parseArgv(argv);
  return {
    preset: flags.has("quick") ? "test" : "bench",
    child: flags.has("child"),
    free: flags.has("free"),
    compareSync: flags.get("sync") !== "false",
    inProcessTools: flags.has("in-process-tools"),
  };
}

const engineFlags = (o: DemoOptions): string[] => ["--model-preset", o.preset, "--sequences", "2", "--context-size", "4096", "--threads", "1"];

/** Starts nats-server and a tool runner (unless tools run in-process), then the engine pod. */
export async function bringUp(o: DemoOptions): Promise<Stack> {
  const components: Component[] = [];
  let flags = engineFlags(o);
  let toolPool: Stack["toolPool"];
  if (!o.inProcessTools) {
    const tools = await startToolStack({ runners: 1 });
    // Pushed first, so it stops last: the engine drains its calls before NATS goes.
    components.push({ name: "nats-server + tool runner", stop: () => tools.stop() });
    flags = [...flags, ...engineNatsFlags(tools)];
    toolPool = tools.pool;
  }
  const pool = toolPool !== undefined ? { toolPool } : {};
  try {
    if (o.child) {
      // The child logs at info: spawnEngine reads its port from the "listening" line (and drains the rest).
      const engine = await spawnEngine(flags, { env: { LOG_LEVEL: "info" } });
      components.push({ name: "engine (child process)", stop: () => engine.stop() });
      return { url: engine.url, components, ...pool };
    }
    const options = parseEnginePodOptions({ flags: parseArgv([...flags, "--port", "0", "--host", "127.0.0.1"]), env: {} });
    const pod = await startEnginePod(options, createLogger("engine-pod", process.env["LOG_LEVEL"] ?? "warn"));
    components.push({ name: "engine (in-process)", stop: () => pod.close() });
    return { url: `http://127.0.0.1:${pod.port}`, components, ...pool };
  } catch (err) {
    await tearDown({ url: "", components });
    throw err;
  }
}

/** Routes a request's tools to the stack's ToolPool, when tools run over NATS. */
function routed(stack: Stack, request: CreateSessionRequest): CreateSessionRequest {
  return stack.toolPool === undefined ? request : { ...request, tools: inPool(request.tools ?? [], stack.toolPool) };
}

export async function tearDown(stack: Stack): Promise<void> {
  for (const c of [...stack.components].reverse()) await c.stop();
}

/** The sample trip-planning workload: three tools of different latency and one that needs two results. */
export function sampleSession(mode: CreateSessionRequest["mode"] = "async"): CreateSessionRequest {
  const tools: ToolSpec[] = builtinToolSpecs().filter((s) => s.name === "sleep" || s.name === "calculator");
  return {
    prompt: "Plan a weekend in Lisbon: find flights and a hotel, check the weather, and total the cost.",
    tools,
    mode,
    maxTokens: 400,
    policy: {
      type: "lpt-dag",
      thinkTokens: 8,
      calls: [
        { id: "weather", tool: "sleep", arguments: { ms: 1000, result: "sunny, 24C" }, dependsOn: [], estimatedLatencyMs: 1000 },
        { id: "flights", tool: "sleep", arguments: { ms: 3000, result: "TP1351 at 09:05, 180 EUR" }, dependsOn: [], estimatedLatencyMs: 3000 },
        { id: "hotel", tool: "sleep", arguments: { ms: 2000, result: "Casa Alfama, 2 nights, 240 EUR" }, dependsOn: [], estimatedLatencyMs: 2000 },
        { id: "total", tool: "calculator", arguments: { expression: "180 + 240" }, dependsOn: ["flights", "hotel"], estimatedLatencyMs: 1 },
      ],
      finalText: " Booked: flights and hotel for 420 EUR; it will be sunny.",
    },
  };
}

const ms = (x: number): string => `${x.toFixed(1).padStart(8)} ms`;
const short = (s: string, n = 60): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s).replace(/\s+/g, " ");

/** One line per event; text is gathered and printed as a count between other events. */
function printer(): { onEvent: (e: SessionEvent) => void } {
  let pendingText = "";
  let pendingTokens = 0;
  let textStart = 0;
  const flushText = (): void => {
    if (pendingTokens === 0) return;
    console.log(`  ${ms(textStart)}  text       ${pendingTokens} pieces: "${short(pendingText, 50)}"`);
    pendingText = "";
    pendingTokens = 0;
  };
  return {
    onEvent(e) {
      if (e.type === "text") {
        if (pendingTokens === 0) textStart = e.t;
        pendingText += e.text;
        pendingTokens++;
        return;
      }
      flushText();
      switch (e.type) {
        case "started":
          console.log(`  ${ms(e.t)}  started    mode=${e.mode} prompt=${e.promptTokens} tokens${e.scripted ? " (scripted)" : ""}`);
          break;
        case "call":
          console.log(`  ${ms(e.t)}  call       ${e.callId} → ${e.tool} ${short(JSON.stringify(e.arguments), 50)}`);
          break;
        case "call_error":
          console.log(`  ${ms(e.t)}  call_error ${e.callId}: ${e.code} ${short(e.message)}`);
          break;
        case "interrupt":
          console.log(
            `  ${ms(e.t)}  interrupt  ${e.id} (${e.kind}) "${short(e.value, 40)}" injected ${e.delayMs.toFixed(1)} ms / ${e.delayTokens} tokens after arrival`,
          );
          break;
        case "trap":
          console.log(`  ${ms(e.t)}  trap       KV ${e.decision} (expected wait ${Math.round(e.expectedWaitMs)} ms, ${e.contextTokens} tokens in context)`);
          break;
        case "resume":
          console.log(`  ${ms(e.t)}  resume     after ${e.decision}, pause+resume cost ${e.costMs.toFixed(1)} ms`);
          break;
        case "done":
          console.log(`  ${ms(e.t)}  done       ${e.reason}`);
          break;
        case "error":
          console.log(`  ${ms(e.t)}  error      ${e.code}: ${e.message}`);
          break;
      }
    },
  };
}

type Done = Extract<SessionEvent, { type: "done" }>;

async function runSession(client: SessionClient, title: string, request: CreateSessionRequest): Promise<{ done: Done; events: SessionEvent[] }> {
  console.log(`\n== ${title}`);
  const p = printer();
  const events = await client.run(request, (e) => p.onEvent(e));
  const done = events.find((e): e is Done => e.type === "done");
  if (done === undefined) throw new Error("the session ended without a done event");
  return { done, events };
}

/** One bar per call, from dispatch to the result's arrival, so the overlap is visible. */
function timeline(label: string, events: SessionEvent[], width = 56): void {
  const done = events.find((e): e is Done => e.type === "done");
  const total = done?.t ?? 0;
  if (total <= 0) return;
  const calls = events.filter((e): e is Extract<SessionEvent, { type: "call" }> => e.type === "call");
  console.log(`\n  ${label}: tool runs over the session (0 … ${total.toFixed(0)} ms)`);
  for (const call of calls) {
    const result = events.find((e): e is Extract<SessionEvent, { type: "interrupt" }> => e.type === "interrupt" && e.id === call.callId);
    const end = result === undefined ? total : result.t - result.delayMs;
    const from = Math.floor((call.t / total) * width);
    const to = Math.max(from + 1, Math.round((end / total) * width));
    const bar = " ".repeat(from) + "█".repeat(Math.min(width, to) - from);
    console.log(`    ${call.callId.padEnd(8)} |${bar.padEnd(width)}| ${(end - call.t).toFixed(0)} ms`);
  }
}

function summary(label: string, run: { done: Done; events: SessionEvent[] }, request: CreateSessionRequest): void {
  const { done, events } = run;
  const toolMs = request.policy?.type === "lpt-dag" ? request.policy.calls.reduce((n, c) => n + (c.estimatedLatencyMs ?? 0), 0) : 0;
  const delays = events.filter((e): e is Extract<SessionEvent, { type: "interrupt" }> => e.type === "interrupt").map((e) => e.delayMs);
  const traps = events.filter((e): e is Extract<SessionEvent, { type: "trap" }> => e.type === "trap").map((e) => e.decision);
  console.log(`\n  ${label}${done.scripted ? " — scripted (LPT oracle picks the calls; every token a real forward pass)" : ""}`);
  console.log(`    total ${done.timings.totalMs.toFixed(0)} ms  (tools alone, run one after another: ${toolMs} ms)`);
  console.log(`    TTFT ${done.timings.ttftMs.toFixed(1)} ms, TPOT ${done.timings.tpotMs.toFixed(2)} ms`);
  console.log(
    `    tokens: prompt ${done.usage.promptTokens}, prefilled ${done.usage.prefilledTokens}, decoded ${done.usage.decodedTokens}, injected ${done.usage.injectedTokens}`,
  );
  console.log(
    `    calls ${done.usage.calls}, interrupts ${done.usage.interrupts}${delays.length > 0 ? ` (injection delay max ${Math.max(...delays).toFixed(1)} ms)` : ""}, traps ${done.usage.traps}${traps.length > 0 ? ` [${traps.join(", ")}]` : ""}`,
  );
}


/**
 * The unscripted session: no policy, the model decides its calls. On Gemma 3
 * 270M when it is present, wearing the repository's CML adapter when that is
 * there too: through the router and NATS to the sample `assistant-cml` app
 * (the default stack), or in an engine pod of its own with builtin tools
 * (`--in-process-tools`). Without Gemma, on the demo's own engine, whose
 * random weights make its "decisions" noise, and it says so.
 */
async function runFree(target: Target): Promise<void> {
  const adapter = existsSync(SHIPPED_CML_ADAPTER) ? SHIPPED_CML_ADAPTER : undefined;
  const decider = `${basename(GEMMA_PATH)}${adapter !== undefined ? ` with the CML LoRA adapter (${basename(dirname(adapter))})` : " (no adapter: never fine-tuned on CML)"}`;
  const report = (run: { done: Done; events: SessionEvent[] }): void => {
    const calls = run.events.filter((e): e is Extract<SessionEvent, { type: "call" }> => e.type === "call");
    console.log(
      `  decided by: ${decider}, no policy: ${calls.length} valid call(s)${calls.length > 0 ? ` (${calls.map((c) => `${c.tool} ${JSON.stringify(c.arguments)}`).join(", ")})` : ""}, ${run.done.usage.interrupts} interrupt(s), ended by ${run.done.reason}`,
    );
  };
  const cml = target.cml;
  if (cml !== undefined) {
    const run = await runSession(cml.client, `free-running session (unscripted) through the router and NATS — AgentApp ${cml.app}`, { prompt: "What is the weather in Lisbon right now?", temperature: 0, seed: 1 });
    report(run);
    return;
  }
  const tools = builtinToolSpecs().filter((s) => s.name === "calculator" || s.name === "echo");
  const request: CreateSessionRequest = { prompt: "What is 6 times 7?", maxTokens: 64, temperature: 0, seed: 1 };
  if (!existsSync(GEMMA_PATH)) {
    console.log(`\n(Gemma 3 270M not found at ${GEMMA_PATH}; run \`bash hack/tools/50-gemma.sh\` to fetch it. The free session runs on the random-weight model instead: its calls are noise.)`);
    const run = await runSession(target.client("async"), "free-running session (unscripted) — the random-weight generated model decides the calls", target.free(request, tools));
    console.log(`  decided by: the generated random-weight model (no policy); ${run.done.usage.calls} valid call(s)`);
    return;
  }
  const t0 = performance.now();
  const options = parseEnginePodOptions({
    flags: parseArgv(["--model", GEMMA_PATH, ...(adapter !== undefined ? ["--adapters", adapter] : []), "--sequences", "1", "--context-size", "4096", "--threads", "2", "--port", "0", "--host", "127.0.0.1"]),
    env: {},
  });
  const pod = await startEnginePod(options, createLogger("engine-pod-gemma", process.env["LOG_LEVEL"] ?? "warn"));
  try {
    console.log(`\nGemma 3 270M engine pod ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (tools in-process).`);
    report(await runSession(new SessionClient(`http://127.0.0.1:${pod.port}`), `free-running session (unscripted) — ${decider} decides the calls`, { ...request, tools }));
  } finally {
    await pod.close();
  }
}

/** Where the demo's sessions go, and how its sample requests look there. */
interface Target {
  /** Where sessions of `mode` are opened. */
  client(mode: "async" | "sync"): SessionClient;
  /** The scripted sample session in `mode`. */
  sample(mode: "async" | "sync"): CreateSessionRequest;
  /** An unscripted request, with `tools` where the target does not bring its own. */
  free(request: CreateSessionRequest, tools: ToolSpec[]): CreateSessionRequest;
  /** With `--free` on the app stack: the app whose model decides its own calls, reached through the router. */
  cml?: { client: SessionClient; app: string };
  stop(): Promise<void>;
}

/** The sample AgentApp through the router (the default). */
async function appTarget(o: DemoOptions): Promise<Target> {
  const cml = o.free && existsSync(GEMMA_PATH) ? { model: GEMMA_PATH, ...(existsSync(SHIPPED_CML_ADAPTER) ? { adapter: SHIPPED_CML_ADAPTER } : {}) } : undefined;
  const stack = await startAppStack({ preset: o.preset, ...(cml !== undefined ? { cml } : {}) });
  const { app } = stack;
  console.log(`AgentApp ${app.namespace}/${app.name} served by the router at ${stack.routerUrl}/v1/apps/${app.namespace}/${app.name} (tools: ${app.tools.map((t) => t.name).join(", ")}; engine pool ${app.enginePool.name}).`);
  for (const note of stack.notes) console.log(`  local stack: ${note}`);
  const clients = { async: SessionClient.forApp(stack.routerUrl, app.namespace, app.name), sync: SessionClient.forApp(stack.routerUrl, app.namespace, stack.syncApp.name) };
  return {
    // An app's calling mode is its own (a request cannot change it): sync sessions go to the sync copy.
    client: (mode) => clients[mode],
    sample: () => appSession(),
    free: (request) => request,
    ...(stack.cmlApp !== undefined ? { cml: { client: SessionClient.forApp(stack.routerUrl, stack.cmlApp.namespace, stack.cmlApp.name), app: `${stack.cmlApp.namespace}/${stack.cmlApp.name}` } } : {}),
    stop: () => stack.stop(),
  };
}

/** One engine in this process, tools inside it (`--in-process-tools`), or over NATS without a router. */
async function engineTarget(o: DemoOptions): Promise<Target> {
  const stack = await bringUp(o);
  const client = new SessionClient(stack.url);
  return {
    client: () => client,
    sample: (mode) => routed(stack, sampleSession(mode)),
    free: (request, tools) => routed(stack, { ...request, tools }),
    stop: () => tearDown(stack),
  };
}

/**
 * The sample workload on the sample AgentApp's own tools (the app brings
 * them; a request through the router names none): the weather service, two
 * slow lookups and a total that needs both.
 */
export function appSession(): CreateSessionRequest {
  return {
    prompt: "Plan a weekend in Lisbon: find flights and a hotel, check the weather, and total the cost.",
    maxTokens: 400,
    policy: {
      type: "lpt-dag",
      thinkTokens: 8,
      calls: [
        { id: "weather", tool: "get_weather", arguments: { city: "Lisbon" }, dependsOn: [], estimatedLatencyMs: 800 },
        { id: "flights", tool: "sleep", arguments: { ms: 3000 }, dependsOn: [], estimatedLatencyMs: 3000 },
        { id: "hotel", tool: "sleep", arguments: { ms: 2000 }, dependsOn: [], estimatedLatencyMs: 2000 },
        { id: "total", tool: "echo", arguments: { text: "180 + 240 = 420 EUR" }, dependsOn: ["flights", "hotel"], estimatedLatencyMs: 5 },
      ],
      finalText: " Booked: flights and hotel for 420 EUR, and the forecast is in.",
    },
  };
}

async function main(): Promise<void> {
  const o = parseDemoOptions(process.argv.slice(2));
  console.log(
    o.inProcessTools
      ? `Interlace demo: one engine on the generated "${o.preset}" model (${o.child ? "child process" : "in-process"}), builtin tools inside it.`
      : `Interlace demo: the sample AgentApp on a local stack — nats-server, a tool runner, an engine on the generated "${o.preset}" model, the router.`,
  );
  const t0 = performance.now();
  const target = o.inProcessTools ? await engineTarget(o) : await appTarget(o);
  console.log(`Ready in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
  let failed = false;
  try {
    // Prefill the shared prompt once, so both modes start from the same resident prefix.
    const w0 = performance.now();
    const warm = await target.client("async").run({ ...target.sample("async"), policy: { type: "text", pieces: ["ok"] }, maxTokens: 4 });
    const started = warm.find((e) => e.type === "started");
    console.log(
      `\nPrompt prefix (${started?.type === "started" ? started.promptTokens : "?"} tokens) prefilled and kept resident in ${((performance.now() - w0) / 1000).toFixed(1)} s.`,
    );
    const asyncRequest = target.sample("async");
    const asyncRun = await runSession(target.client("async"), "async session: tools run while the model keeps decoding (scripted)", asyncRequest);
    let syncRun: { done: Done; events: SessionEvent[] } | undefined;
    const syncRequest = target.sample("sync");
    if (o.compareSync) syncRun = await runSession(target.client("sync"), "the same workload in sync mode: stop at each call, wait, re-enter (scripted)", syncRequest);
    if (o.free) await runFree(target);
    timeline("async", asyncRun.events);
    if (syncRun !== undefined) timeline("sync", syncRun.events);
    console.log("\n== summary");
    summary("async", asyncRun, asyncRequest);
    if (syncRun !== undefined) {
      summary("sync", syncRun, syncRequest);
      console.log(`\n  async finished in ${((asyncRun.done.timings.totalMs / syncRun.done.timings.totalMs) * 100).toFixed(0)}% of the sync time.`);
    }
  } catch (err) {
    failed = true;
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await target.stop();
    console.log("\nShut down cleanly.");
  }
  process.exitCode = failed ? 1 : 0;
}

// Run only as the entrypoint, so other scripts may import bringUp/sampleSession.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();

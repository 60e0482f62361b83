/**
 * @module The engine pod's options: defaults, flags over environment,
 * and a clear error for each invalid combination.
 */
import t from "tap";
import { parseArgv, type Source } from "../../common/src/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";

const src = (argv: string[], env: Record<string, string> = {}): Source => ({ flags: parseArgv(argv), env });

t.test("defaults", async (t) => {
  const o = parseEnginePodOptions(src(["--model-preset", "test"], { HOSTNAME: "node-1.example" }));
  t.equal(o.modelPreset, "test");
  t.equal(o.engine.modelPath, "");
  t.equal(o.server.port, 8080);
  t.equal(o.engine.threads, 1);
  t.equal(o.engine.gpu, false);
  t.equal(o.engine.kvPolicy, "auto");
  t.equal(o.executor.kind, "in-process");
  t.equal(o.podName, "node-1-example", "the host name, made subject-safe");
  t.ok(o.server.maxPromptBytes <= o.server.maxBodyBytes);
});

t.test("flags over environment", async (t) => {
  const o = parseEnginePodOptions(
    src(["--model", "/m.gguf", "--port=9000", "--sequences", "4", "--prefix-store", "2", "--gpu", "cuda", "--kv-policy", "swap", "--executor", "nats"], {
      PORT: "1",
      NATS_URL: "nats://n:4222",
      POD_NAME: "engine-0",
      CONTEXT_SIZE: "4096",
      MAX_BODY_BYTES: "2048",
    }),
  );
  t.equal(o.engine.modelPath, "/m.gguf");
  t.equal(o.modelPreset, undefined);
  t.equal(o.server.port, 9000);
  t.equal(o.engine.sequences, 4);
  t.equal(o.engine.prefixStore, 2);
  t.equal(o.engine.contextSize, 4096);
  t.equal(o.engine.gpu, "cuda");
  t.equal(o.engine.kvPolicy, "swap");
  t.equal(o.executor.kind, "nats");
  t.equal(o.executor.natsUrl, "nats://n:4222");
  t.equal(o.podName, "engine-0");
  t.equal(o.server.maxBodyBytes, 2048);
  t.equal(o.server.maxPromptBytes, 2048, "the prompt limit never exceeds the body limit");
  t.equal(parseEnginePodOptions(src(["--model-preset", "test"])).server.drainGraceMs, 25_000, "the drain's grace period fits Kubernetes' default 30 s");
  t.equal(parseEnginePodOptions(src(["--model-preset", "test", "--drain-grace-ms", "0"])).server.drainGraceMs, 0);
  const pooled = parseEnginePodOptions(src(["--model-preset", "test", "--executor", "nats", "--nats-url", "nats://x", "--default-pool", "ns/tools"]));
  t.same(pooled.executor.defaultPool, { namespace: "ns", name: "tools" });
  t.equal(pooled.executor.runnerHoldMs, 60_000, "a call to a tool pool at zero waits for a runner as long as the router's cold-start hold");
  t.equal(parseEnginePodOptions(src(["--model-preset", "test", "--tool-runner-hold-ms", "0"])).executor.runnerHoldMs, 0);
});

t.test("clear errors", async (t) => {
  const cases: [string[], RegExp][] = [
    [[], /no model: give --model PATH \(MODEL\) or --model-preset test\|bench/],
    [["--model", "/m", "--model-preset", "test"], /either --model .* or --model-preset/],
    [["--model-preset", "huge"], /--model-preset \(MODEL_PRESET\): expected one of test\|bench/],
    [["--model-preset", "test", "--executor", "nats"], /--executor nats needs --nats-url/],
    [["--model-preset", "test", "--executor", "grpc"], /expected one of in-process\|nats/],
    [["--model-preset", "test", "--port", "70000"], /--port \(PORT\): must be <= 65535/],
    [["--model-preset", "test", "--gpu", "yes"], /--gpu \(GPU\): expected one of false\|cuda\|auto/],
    [["--model-preset", "test", "--kv-policy", "maybe"], /--kv-policy/],
    [["--model-preset", "test", "--prefix-store", "-1"], /--prefix-store \(PREFIX_STORE\): must be >= 0/],
    [["--model-preset", "test", "--pod-name", "a.b"], /--pod-name \(POD_NAME\)/],
    [["--model-preset", "test", "--default-pool", "tools"], /--default-pool \(DEFAULT_POOL\): expected namespace\/name/],
    [["--model-preset", "test", "--default-pool", "ns/tools"], /needs --executor nats/],
    [["--model-preset", "test", "--max-body-bytes", "2048", "--max-prompt-bytes", "4096"], /--max-prompt-bytes .* must be <= 2048/],
    [["--model-preset", "test", "--drain-grace-ms", "-5"], /--drain-grace-ms \(DRAIN_GRACE_MS\): must be >= 0/],
    [["--model-preset", "test", "--drain-grace-ms", "soon"], /--drain-grace-ms \(DRAIN_GRACE_MS\)/],
    [["--model-preset", "test", "--tool-runner-hold-ms", "-1"], /--tool-runner-hold-ms \(TOOL_RUNNER_HOLD_MS\): must be >= 0/],
    [["--model-preset", "test", "--nats-url", "nats://x", "--pool", "ns/p", "--kv-events-ms", "-1"], /--kv-events-ms \(KV_EVENTS_MS\): must be >= 0/],
    [["--model-preset", "test", "--nats-url", "nats://x", "--pool", "ns/p", "--capacity-check-ms", "-1"], /--capacity-check-ms \(CAPACITY_CHECK_MS\): must be >= 0/],
  ];
  for (const [argv, message] of cases) t.throws(() => parseEnginePodOptions(src(argv)), message, argv.join(" ") || "(nothing)");
});

t.test("--pool turns on heartbeats, KV events (every 100 ms by default) and capacity checks (every 20 ms); 0 turns either off", async (t) => {
  const on = parseEnginePodOptions(src(["--model-preset", "test", "--nats-url", "nats://x", "--pool", "ns/p"]));
  t.equal(on.heartbeat?.kvEventsMs, 100);
  t.equal(on.heartbeat?.capacityCheckMs, 20);
  const off = parseEnginePodOptions(src(["--model-preset", "test", "--nats-url", "nats://x", "--pool", "ns/p", "--kv-events-ms", "0", "--capacity-check-ms", "0"]));
  t.equal(off.heartbeat?.kvEventsMs, 0);
  t.equal(off.heartbeat?.capacityCheckMs, 0);
});

/**
 * @module Property-based fuzzing (fast-check) of every decoder that reads
 * untrusted input: the NATS message bodies (calls, results, interrupts),
 * subject and KV-key parsers, interrupt signatures, credentials claims, API
 * key lists, and every HTTP body of the engine API through a real
 * EngineServer. Any input yields a validation failure (or a 4xx / 503
 * not-ready answer) with a reason — never an exception, a 5xx or a hang.
 * The counts per decoder are printed (`fuzzed <decoder>: <n> inputs, 0 crashes`).
 */
import t, { type Test } from "tap";
import fc from "fast-check";
import { createLogger } from "../../common/src/index.js";
import { parseCallMessage, parseIntrMessage, parseInterruptSubject, parseRunnerKey, readHeaders } from "../../common/src/protocol/index.js";
import { InterruptVerifier } from "../../common/src/security/interrupt-signature.js";
import { credsClaims } from "../../common/src/security/nats-connect.js";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { EngineServer, DEFAULT_SERVER_LIMITS } from "../../engine-pod/src/server/engine-server.js";
import { EngineMetrics } from "../../engine-pod/src/metrics/index.js";

const RUNS = Number(process.env["FUZZ_RUNS"] ?? 2_000);

/** JSON-ish values that look like protocol messages (valid keys, wrong or odd values) as well as anything. */
const messageLike = fc.oneof(
  fc.anything(),
  fc.record(
    {
      v: fc.oneof(fc.constant(1), fc.anything()),
      type: fc.constantFrom("result", "interrupt", "call", "", 1),
      callId: fc.oneof(fc.string(), fc.anything()),
      sessionId: fc.oneof(fc.string({ maxLength: 300 }), fc.anything()),
      tool: fc.string(),
      arguments: fc.oneof(fc.object(), fc.anything()),
      deadline: fc.oneof(fc.double(), fc.anything()),
      replyTo: fc.oneof(fc.constant("interlace.intr.p.s"), fc.string()),
      publishedAt: fc.double(),
      ok: fc.oneof(fc.boolean(), fc.anything()),
      output: fc.oneof(fc.string(), fc.anything()),
      runMs: fc.double(),
      attempt: fc.integer(),
      runner: fc.string(),
      token: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), fc.anything()),
      kind: fc.constantFrom("user", "agent", "x"),
      value: fc.string(),
    },
    { requiredKeys: [] },
  ),
);
const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 2_000 }),
  messageLike.map((v) => new TextEncoder().encode(JSON.stringify(v) ?? "null")),
  fc.string().map((s) => new TextEncoder().encode(s)),
);

function fuzz<T>(t: Test, name: string, arb: fc.Arbitrary<T>, check: (input: T) => void): void {
  let n = 0;
  fc.assert(
    fc.property(arb, (input) => {
      n++;
      check(input);
    }),
    { numRuns: RUNS },
  );
  t.pass(`fuzzed ${name}: ${n} inputs, 0 crashes`);
  t.comment(`fuzzed ${name}: ${n} inputs, 0 crashes`);
}

t.test("NATS decoders never throw", async (t) => {
  fuzz(t, "parseCallMessage", bytes, (b) => {
    const r = parseCallMessage(b);
    if (!r.ok && typeof r.error !== "string") throw new Error("no reason");
  });
  fuzz(t, "parseIntrMessage", bytes, (b) => {
    const r = parseIntrMessage(b);
    if (!r.ok && typeof r.error !== "string") throw new Error("no reason");
  });
  fuzz(t, "parseInterruptSubject", fc.string({ maxLength: 300 }), (s) => void parseInterruptSubject(s));
  fuzz(t, "parseRunnerKey", fc.string({ maxLength: 300 }), (s) => void parseRunnerKey(s));
  fuzz(t, "readHeaders", fc.dictionary(fc.constantFrom("Interlace-Call-Id", "Interlace-Session-Id", "Interlace-Reply-To", "Nats-Msg-Id", "X"), fc.string({ minLength: 0, maxLength: 50 })), (d) => {
    const h = natsHeaders();
    for (const [k, v] of Object.entries(d)) h.set(k, v.replace(/[\r\n]/g, ""));
    readHeaders(h);
  });
  const verifier = new InterruptVerifier("k".repeat(32));
  fuzz(t, "InterruptVerifier.check", fc.tuple(fc.string(), fc.uint8Array({ maxLength: 200 }), fc.option(fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f]{8}\.\d{1,16}\.[0-9a-f]{64}$/)))), ([subject, body, sig]) => {
    const r = verifier.check(subject, body, sig ?? undefined);
    if (r.ok) throw new Error("a random signature was accepted");
  });
  fuzz(t, "credsClaims", fc.string({ maxLength: 500 }), (s) => {
    try {
      credsClaims(s);
    } catch (err) {
      // Rejecting is fine; it must say why.
      if (!(err instanceof Error) || err.message === "") throw new Error("unexplained failure");
    }
  });
  fuzz(t, "parseApiKeys", fc.string({ maxLength: 300 }), (s) => {
    try {
      parseApiKeys(s);
    } catch (err) {
      if (!(err instanceof Error) || !/principal/.test(err.message)) throw err;
    }
  });
});

t.test("HTTP bodies of the engine API: 4xx (or 503 not ready), never 5xx or a hang", async (t) => {
  const server = new EngineServer({
    catalog: { builtins: new Map(), pools: true },
    limits: { ...DEFAULT_SERVER_LIMITS, maxBodyBytes: 16_384 },
    metrics: new EngineMetrics({ processMetrics: false }),
    log: createLogger("fuzz", "silent"),
  });
  const port = await server.listen(0, "127.0.0.1");
  t.teardown(() => server.close());
  const routes: [string, string][] = [
    ["POST", "/v1/sessions"],
    ["POST", "/v1/sessions/s1/interrupts"],
    ["POST", "/v1/chat/completions"],
  ];
  const bodyArb = fc.oneof(
    fc.string({ maxLength: 400 }),
    fc.json().map((j) => j),
    messageLike.map((v) => JSON.stringify(v) ?? "null"),
    fc.record({ prompt: fc.anything(), tools: fc.anything(), messages: fc.anything(), value: fc.anything(), mode: fc.anything() }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  );
  for (const [method, path] of routes) {
    let n = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(bodyArb, async (body) => {
        n++;
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, body, headers: { "content-type": "application/json" }, signal: AbortSignal.timeout(5_000) });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const text = await res.text();
        if (!((res.status >= 400 && res.status < 500) || res.status === 503)) throw new Error(`status ${res.status}: ${text}`);
        const parsed = JSON.parse(text) as { error?: { message?: string } };
        if (typeof parsed.error?.message !== "string" || parsed.error.message === "") throw new Error(`no reason: ${text}`);
      }),
      { numRuns: Math.min(RUNS, 400) },
    );
    t.pass(`fuzzed ${method} ${path}: ${n} bodies, 0 crashes (${[...statuses].map(([s, c]) => `${s}×${c}`).join(", ")})`);
  }
});

/**
 * @module A real Prometheus scrapes a real engine pod (llama.cpp on the
 * generated `test` model) and a real tool runner process while an async
 * session runs its tools on that runner over NATS; PromQL over the scraped
 * series must show the session: TTFT/TPOT observed, tokens decoded and
 * prefilled, every result injected, no session left active, calls counted by
 * tool and outcome on both sides and agreeing with each other.
 */
import t from "tap";
import type { Sample } from "../../hack/prometheus.js";
import { ENGINE_POD, NAMESPACE, RUNNER_ID, runSession, sessionRequest, startObservedStack } from "./observed-stack.js";

const { prom, engineBase, runner, pool } = await startObservedStack(t);

/** The single value of a query expected to return one series (0 when empty). */
const one = (samples: Sample[]): number => {
  if (samples.length > 1) throw new Error(`expected at most one series, got ${JSON.stringify(samples)}`);
  return samples[0]?.value ?? 0;
};
const byLabel = (samples: Sample[], label: string): Record<string, number> => Object.fromEntries(samples.map((s) => [s.metric[label] ?? "", s.value]));

t.test("every component serves /healthz, /readyz and /metrics", async (t) => {
  for (const [name, base] of [["engine", engineBase], ["toolrunner", `http://127.0.0.1:${runner.port}`]] as const) {
    t.equal((await fetch(`${base}/healthz`)).status, 200, `${name} /healthz`);
    t.equal((await fetch(`${base}/readyz`)).status, 200, `${name} /readyz`);
    const metrics = await fetch(`${base}/metrics`);
    t.equal(metrics.status, 200, `${name} /metrics`);
    t.match(metrics.headers.get("content-type"), /^text\/plain/, `${name} /metrics is Prometheus text`);
  }
  const up = byLabel(await prom.samples("up"), "job");
  t.same(up, { engine: 1, toolrunner: 1 }, "Prometheus scrapes both targets");
  const targets = await prom.targets();
  t.same(
    targets.map((x) => [x.job, x.labels["namespace"], x.labels["pod"]]).sort(),
    [["engine", NAMESPACE, ENGINE_POD], ["toolrunner", NAMESPACE, RUNNER_ID]],
    "targets carry the namespace and pod labels",
  );
});

t.test("before any session: gauges are exported, counters start at zero", async (t) => {
  t.equal(one(await prom.samples("interlace_engine_active_sessions")), 0, "no active session");
  t.equal(one(await prom.samples("interlace_engine_max_sessions")), 2, "max sessions = --sequences");
  t.ok(one(await prom.samples("interlace_engine_kv_cells_total")) > 0, "KV cells allocated");
  t.equal(one(await prom.samples("interlace_toolrunner_calls_in_flight")), 0, "runner idle");
  t.same(byLabel(await prom.samples("interlace_engine_traps_total"), "decision"), { keep: 0, swap: 0, recompute: 0 }, "every trap decision exported at 0");
  t.equal((await prom.samples("interlace_toolrunner_calls_total")).length, 0, "no runner calls yet");
});

t.test("a session's metrics reach Prometheus with sane values", async (t) => {
  const events = await runSession(engineBase, sessionRequest(pool));
  const done = events[events.length - 1];
  t.equal(done?.type, "done", "the session finished");
  if (done?.type !== "done") return;
  const interrupts = events.filter((e) => e.type === "interrupt");
  t.equal(interrupts.length, 3, "three tool results injected");

  // Scrape-time counters move only when Prometheus scrapes after the session: wait for them.
  await prom.waitForQuery("sum(interlace_toolrunner_calls_total)", (s) => one(s) >= 3);
  await prom.waitForQuery("interlace_engine_interrupts_injected_total", (s) => one(s) >= 3);
  await prom.waitForQuery("sum(interlace_engine_sessions_total)", (s) => one(s) >= 1);

  t.same(byLabel(await prom.samples('interlace_engine_sessions_total{mode="async"}'), "reason"), { [done.reason]: 1 }, "one async session, by its end reason");
  t.equal(one(await prom.samples('interlace_engine_ttft_seconds_count{kind="session"}')), 1, "TTFT observed once");
  t.equal(one(await prom.samples('interlace_engine_tpot_seconds_count{kind="session"}')), 1, "TPOT observed once");
  const ttft = one(await prom.samples('interlace_engine_ttft_seconds_sum{kind="session"}'));
  t.ok(ttft > 0 && ttft < 60, `TTFT is a positive duration (${ttft} s)`);
  t.ok(Math.abs(ttft - done.timings.ttftMs / 1000) < 1e-6, "TTFT matches the session's own timing");
  const tpot = one(await prom.samples('interlace_engine_tpot_seconds_sum{kind="session"}'));
  t.ok(tpot > 0 && tpot < 10, `TPOT is a positive duration (${tpot} s)`);
  t.ok(one(await prom.samples('histogram_quantile(0.5, sum by (le) (interlace_engine_ttft_seconds_bucket{kind="session"}))')) > 0, "TTFT quantile from buckets");

  const decoded = one(await prom.samples("interlace_engine_tokens_decoded_total"));
  t.ok(decoded >= done.usage.decodedTokens, `tokens decoded counter (${decoded}) covers the session's ${done.usage.decodedTokens}`);
  t.ok(one(await prom.samples("interlace_engine_tokens_prefilled_total")) > 0, "prompt tokens prefilled");
  t.ok(one(await prom.samples("interlace_engine_interrupts_queued_total")) >= 3, "interrupts queued");
  t.equal(one(await prom.samples("interlace_engine_interrupts_injected_total")), 3, "interrupts injected");
  t.same(byLabel(await prom.samples("interlace_engine_injection_delay_seconds_count"), "kind"), { tool_result: 3 }, "injection delay per result");
  t.equal(one(await prom.samples("interlace_engine_active_sessions")), 0, "the finished session released its sequence");

  const engineCalls = await prom.samples("interlace_engine_tool_calls_total");
  t.same(
    Object.fromEntries(engineCalls.map((s) => [`${s.metric["tool"]}/${s.metric["outcome"]}`, s.value])),
    { "sleep/ok": 1, "echo/ok": 1, "calculator/ok": 1 },
    "engine: calls by tool and outcome",
  );
  const runnerCalls = await prom.samples("interlace_toolrunner_calls_total");
  t.same(
    Object.fromEntries(runnerCalls.map((s) => [`${s.metric["tool"]}/${s.metric["outcome"]}`, s.value])),
    { "sleep/ok": 1, "echo/ok": 1, "calculator/ok": 1 },
    "runner: calls by tool and outcome",
  );
  t.ok(runnerCalls.every((s) => s.metric["pod"] === RUNNER_ID && s.metric["namespace"] === NAMESPACE), "runner series carry its target labels");
  t.same(
    await prom.samples('sum by (tool) (interlace_engine_tool_calls_total{outcome="ok"}) - sum by (tool) (interlace_toolrunner_calls_total{outcome="ok"})').then((s) => s.map((x) => x.value)),
    [0, 0, 0],
    "engine and runner agree per tool",
  );
  t.equal(one(await prom.samples("sum(interlace_executor_calls_total)")), 3, "the engine's NATS executor counted the calls");
  const sleepRun = one(await prom.samples('interlace_toolrunner_call_duration_seconds_sum{tool="sleep"}'));
  t.ok(sleepRun >= 0.29, `the runner timed the 300 ms sleep (${sleepRun} s)`);
  const sleepSeen = one(await prom.samples('interlace_engine_tool_call_duration_seconds_sum{tool="sleep"}'));
  t.ok(sleepSeen >= sleepRun, `the engine saw the sleep take at least the runner's run time (${sleepSeen} s)`);
  // The runner counts a call done after it has published the result and acked: a scrape in between still sees it.
  t.equal(one(await prom.waitForQuery("interlace_toolrunner_calls_in_flight", (x) => one(x) === 0)), 0, "nothing left in flight");

  const http = await prom.samples('interlace_engine_http_requests_total{method="POST"}');
  t.ok(http.some((s) => s.metric["status"] === "201" && s.value >= 1), `the create request is counted (${JSON.stringify(http.map((s) => s.metric))})`);
});

/**
 * @module The Executor conformance suite: every Executor implementation
 * (in-process, NATS) runs it against its own tool backend serving the
 * builtin tools (`echo`, `sleep`, `calculator`). It checks result
 * correlation, concurrency, timeouts, tool failures, cancellation, closing,
 * and that `execute` never rejects. Assertions are on outcomes and ordering,
 * never on measured durations.
 */
import type { Test } from "tap";
import { ErrorCode, type ToolSpec } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import type { Executor, ToolCall, ToolResult } from "../../engine-pod/src/executor/index.js";

/** One executor under test, fresh for each subtest. */
export interface ConformanceSubject {
  executor: Executor;
  /** Stops whatever `create` started (the executor is closed by the suite first). */
  teardown?: () => Promise<void> | void;
}

export interface ConformanceOptions {
  /** Creates an executor whose backend serves the builtin tools. */
  create: () => Promise<ConformanceSubject>;
  /**
   * The spec callers send for a builtin tool (e.g. adds `pool` for NATS).
   * Default: the builtin spec as is.
   */
  spec?: (builtin: ToolSpec) => ToolSpec;
  /** Deadline for calls that should complete, ms from now (default 30 s). */
  generousDeadlineMs?: number;
}

/** Registers the conformance subtests on `t`. */
export function executorConformance(t: Test, options: ConformanceOptions): void {
  const specs = new Map(builtinToolSpecs().map((s) => [s.name, options.spec?.(s) ?? s]));
  const generous = options.generousDeadlineMs ?? 30_000;
  let seq = 0;
  const call = (tool: string, args: Record<string, unknown>, deadlineMs = generous): ToolCall => {
    const unknown: ToolSpec = { name: tool, description: "not a builtin", parameters: { type: "object" } };
    const spec = specs.get(tool) ?? options.spec?.(unknown) ?? unknown;
    return { id: `call-${++seq}`, sessionId: "conformance", tool, arguments: args, spec, deadline: Date.now() + deadlineMs };
  };
  const subject = async (tt: Test): Promise<Executor> => {
    const s = await options.create();
    tt.teardown(async () => {
      await s.executor.close();
      await s.teardown?.();
    });
    return s.executor;
  };
  /** Awaits a result, failing the test (not throwing) if the promise rejects. */
  const settle = async (tt: Test, p: Promise<ToolResult>): Promise<ToolResult | undefined> => {
    try {
      return await p;
    } catch (err) {
      tt.fail(`execute rejected: ${String(err)}`);
      return undefined;
    }
  };
  const isError = (tt: Test, r: ToolResult | undefined, code: string, msg: string): void => {
    tt.ok(r, `${msg}: resolved`);
    if (r === undefined) return;
    tt.equal(r.ok, false, `${msg}: ok is false`);
    tt.equal(r.error?.code, code, `${msg}: error code ${code}`);
    tt.ok(r.output.length > 0, `${msg}: the model gets a readable error line`);
  };

  t.test("results correlate with their calls", async (tt) => {
    const executor = await subject(tt);
    const calls = Array.from({ length: 6 }, (_, i) => call("echo", { text: `payload ${i}` }));
    const results = await Promise.all(calls.map((c) => settle(tt, executor.execute(c))));
    results.forEach((r, i) => {
      tt.equal(r?.callId, calls[i]!.id, `result ${i} carries its call id`);
      tt.equal(r?.ok, true, `result ${i} ok`);
      tt.equal(r?.output, `payload ${i}`, `result ${i} carries its own output`);
    });
    const sum = await settle(tt, executor.execute(call("calculator", { expression: "(2 + 3) * 4" })));
    tt.equal(sum?.output, "20", "calculator result");
  });

  t.test("calls run concurrently: a short call started after a long one finishes first", async (tt) => {
    const executor = await subject(tt);
    const order: string[] = [];
    const long = executor.execute(call("sleep", { ms: 1500, result: "long" })).then((r) => (order.push(r.output), r));
    const short = executor.execute(call("sleep", { ms: 20, result: "short" })).then((r) => (order.push(r.output), r));
    const [l, s] = await Promise.all([settle(tt, long), settle(tt, short)]);
    tt.equal(l?.ok, true);
    tt.equal(s?.ok, true);
    tt.same(order, ["short", "long"], "the short call did not wait for the long one");
  });

  t.test("a call past its deadline resolves with tool_timeout", async (tt) => {
    const executor = await subject(tt);
    const r = await settle(tt, executor.execute(call("sleep", { ms: 60_000 }, 300)));
    isError(tt, r, ErrorCode.ToolTimeout, "timed out call");
    const late = await settle(tt, executor.execute(call("echo", { text: "x" }, -1)));
    isError(tt, late, ErrorCode.ToolTimeout, "call whose deadline already passed");
  });

  t.test("a tool that throws resolves with tool_failed and its message", async (tt) => {
    const executor = await subject(tt);
    const r = await settle(tt, executor.execute(call("calculator", { expression: "1 / 0" })));
    isError(tt, r, ErrorCode.ToolFailed, "failing tool");
    tt.match(r?.error?.message ?? "", /division by zero/, "the tool's message is kept");
    const ok = await settle(tt, executor.execute(call("echo", { text: "still fine" })));
    tt.equal(ok?.output, "still fine", "the executor keeps working after a failure");
  });

  t.test("abort resolves with cancelled", async (tt) => {
    const executor = await subject(tt);
    const ac = new AbortController();
    const p = executor.execute(call("sleep", { ms: 60_000 }), ac.signal);
    setTimeout(() => ac.abort(), 100);
    isError(tt, await settle(tt, p), ErrorCode.Cancelled, "aborted call");
    const pre = new AbortController();
    pre.abort();
    isError(tt, await settle(tt, executor.execute(call("echo", { text: "x" }), pre.signal)), ErrorCode.Cancelled, "call aborted before it started");
  });

  t.test("execute never rejects", async (tt) => {
    const executor = await subject(tt);
    const unknown = await settle(tt, executor.execute(call("no_such_tool", {})));
    tt.equal(unknown?.ok, false, "unknown tool → error result");
    const badArgs = await settle(tt, executor.execute(call("sleep", { ms: "soon" })));
    tt.equal(badArgs?.ok, false, "bad arguments → error result");
    tt.ok((badArgs?.output.length ?? 0) > 0, "bad arguments → readable error");
  });

  t.test("close resolves pending calls as cancelled, and later calls too", async (tt) => {
    const executor = await subject(tt);
    const pending = executor.execute(call("sleep", { ms: 60_000 }));
    await new Promise((r) => setTimeout(r, 100));
    await executor.close();
    isError(tt, await settle(tt, pending), ErrorCode.Cancelled, "pending call at close");
    isError(tt, await settle(tt, executor.execute(call("echo", { text: "x" }))), ErrorCode.Cancelled, "call after close");
  });
}

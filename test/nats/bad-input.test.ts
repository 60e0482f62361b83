/**
 * Bad input and failing tools, each against a real nats-server: a malformed
 * message on a tool subject, arguments that break the schema, an unknown
 * tool, a tool that throws, a tool over its timeout, an HTTP tool answering
 * 500 (retried only when idempotent), MCP tools over Streamable HTTP. Each
 * becomes a clear error result, and the runner keeps serving.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, headers } from "@nats-io/transport-node";
import {
  Header,
  intrStream,
  interruptSubject,
  parseIntrMessage,
  PROTOCOL_VERSION,
  toolSubject,
  type ResultMessage,
  type RunnerToolSpec,
} from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { BUILTIN_TOOLS, counterValue, makeCall, POOL, poolConfig, startExecutor, startRunner } from "./fixtures.js";
import { startMcpServer } from "./mcp-server.js";

t.test("bad input and failing tools become clear error results", async (t) => {
  const server = await startNatsServer(t);

  // An HTTP backend: /ok echoes, /fail answers 500 and counts requests per path.
  const hits = new Map<string, number>();
  const http = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      hits.set(req.url ?? "", (hits.get(req.url ?? "") ?? 0) + 1);
      if (req.url?.startsWith("/ok")) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ got: JSON.parse(body) }));
      else res.writeHead(500).end("database unavailable");
    });
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
  t.teardown(() => new Promise<void>((r) => http.close(() => r())));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const mcp = await startMcpServer();
  t.teardown(() => mcp.stop());

  const anyArgs = { type: "object" };
  const tools: RunnerToolSpec[] = [
    ...BUILTIN_TOOLS,
    { name: "slow", description: "sleep with a 200 ms timeout", parameters: anyArgs, timeoutMs: 200, implementation: { type: "builtin", builtin: "sleep" } },
    { name: "http_ok", description: "", parameters: anyArgs, implementation: { type: "http", url: `${base}/ok` } },
    { name: "http_500_idem", description: "", parameters: anyArgs, idempotent: true, implementation: { type: "http", url: `${base}/fail-idem` } },
    { name: "http_500", description: "", parameters: anyArgs, implementation: { type: "http", url: `${base}/fail` } },
    { name: "mcp_add", description: "", parameters: anyArgs, implementation: { type: "mcp", url: mcp.url, tool: "add" } },
    { name: "explode", description: "", parameters: anyArgs, implementation: { type: "mcp", url: mcp.url } },
    { name: "crash", description: "", parameters: anyArgs, implementation: { type: "mcp", url: mcp.url } },
  ];
  const runner = await startRunner(t, server.url, poolConfig({ tools, retries: 2 }));
  const executor = await startExecutor(t, server.url);
  const call = (tool: string, args: Record<string, unknown>) => executor.execute(makeCall("s1", tool, args));

  await t.test("arguments that break the tool's schema", async (t) => {
    const r = await call("calculator", { expression: 42 });
    t.equal(r.error?.code, "invalid_arguments");
    t.match(r.output, /^error: invalid_arguments: calculator: "expression" must be string/);
  });

  await t.test("an unknown tool", async (t) => {
    const r = await call("nope", {});
    t.equal(r.error?.code, "unknown_tool");
    t.match(r.output, /has no tool "nope"/);
  });

  await t.test("a tool that throws", async (t) => {
    const r = await call("calculator", { expression: "2 +* 3" });
    t.equal(r.error?.code, "tool_failed");
    t.match(r.output, /^error: tool_failed: calculator failed: /);
  });

  await t.test("a tool over its timeout", async (t) => {
    const r = await call("slow", { ms: 5_000 });
    t.equal(r.error?.code, "tool_timeout");
    t.match(r.output, /slow did not finish within 200 ms/);
  });

  await t.test("HTTP tools: 200, 500 without retry, 500 retried when idempotent", async (t) => {
    const ok = await call("http_ok", { q: "x" });
    t.equal(ok.ok, true);
    t.same(JSON.parse(ok.output), { got: { q: "x" } });
    const fail = await call("http_500", {});
    t.equal(fail.error?.code, "tool_failed");
    t.match(fail.output, /HTTP 500 .*database unavailable.*not retried: the tool is not idempotent/);
    t.equal(hits.get("/fail"), 1, "a non-idempotent tool is called once");
    const idem = await call("http_500_idem", {});
    t.equal(idem.error?.code, "tool_failed");
    t.match(idem.output, /HTTP 500 .*after 3 attempts/);
    t.equal(hits.get("/fail-idem"), 3, "an idempotent tool is retried (retries: 2)");
  });

  await t.test("MCP tools over Streamable HTTP", async (t) => {
    const add = await call("mcp_add", { a: 2, b: 40 });
    t.equal(add.ok, true);
    t.equal(add.output, "42");
    const explode = await call("explode", {});
    t.equal(explode.error?.code, "tool_failed");
    t.match(explode.output, /the reactor is on fire/);
    const crash = await call("crash", {});
    t.equal(crash.error?.code, "tool_failed");
    t.match(crash.output, /the MCP handler crashed/);
  });

  await t.test("malformed messages on a tool subject", async (t) => {
    // Read what the runner answers to pod "probe" through our own consumer of the interrupt stream.
    const nc = await connect({ servers: server.url });
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(intrStream("default"), { durable_name: "probe", ack_policy: AckPolicy.Explicit, filter_subject: "interlace.intr.default.probe.>" });
    const js = jetstream(nc);
    const replyTo = interruptSubject({ namespace: "default", pod: "probe" }, "s9");
    const h = headers();
    h.set(Header.Protocol, String(PROTOCOL_VERSION));
    h.set(Header.CallId, "bad-1");
    h.set(Header.SessionId, "s9");
    h.set(Header.ReplyTo, replyTo);
    await js.publish(toolSubject(POOL, "echo"), "{this is not json", { headers: h });
    // No headers and no body: nobody to answer; dropped, counted.
    await js.publish(toolSubject(POOL, "echo"), "");
    // A well-formed body that breaks the call schema.
    await js.publish(toolSubject(POOL, "echo"), JSON.stringify({ v: PROTOCOL_VERSION, callId: "bad-2", sessionId: "s9", tool: "echo", replyTo }), { headers: h });
    const consumer = await js.consumers.get(intrStream("default"), "probe");
    const got: ResultMessage[] = [];
    while (got.length < 2) {
      const m = await consumer.next({ expires: 5_000 });
      if (m === null) break;
      const parsed = parseIntrMessage(m.data);
      if (parsed.ok && parsed.value.type === "result") got.push(parsed.value);
      m.ack();
    }
    t.equal(got.length, 2);
    t.equal(got[0]?.error?.code, "malformed_call");
    t.match(got[0]?.output, /malformed call message: body is not valid JSON/);
    t.equal(got[1]?.error?.code, "malformed_call");
    t.match(got[1]?.output, /call must have required property 'arguments'/);
    const until = Date.now() + 5_000;
    while ((await counterValue(runner.metrics.malformed)) < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    t.equal(await counterValue(runner.metrics.malformed), 3, "all three counted as malformed");
  });

  await t.test("the runner keeps serving", async (t) => {
    const r = await call("echo", { text: "still here" });
    t.equal(r.ok, true);
    t.equal(r.output, "still here");
  });
});

/**
 * A program's spec (its create body and every `calls` body) is one entry of
 * the shared program store, so it cannot outgrow one NATS message. On a real
 * nats-server with a 64 KiB `max_payload`, a create or an extend that would
 * take it over is refused with a 413 naming the limit, the program already
 * stored is untouched, and a program within the limit is created as before.
 * (Before, the bucket write failed after the body had been accepted: a 500.)
 */
import t from "tap";
import { appConfig, postJson, startStack } from "./fixtures.js";

const stack = await startStack(t, {
  engines: 0,
  routers: 1,
  nats: { maxPayloadBytes: 64 * 1024 },
  router: { maxBodyBytes: 262_144, maxVariableBytes: 200_000 },
});
await stack.putApp(
  appConfig("reports", {
    tools: [],
    semanticFunctions: [{ name: "summarize", template: "Summarize: {{input:chunk}}\nSummary: {{output:summary}}", outputs: [{ name: "summary", maxTokens: 4, temperature: 0 }], tools: false }],
  }),
);
const app = `${stack.url(0)}/v1/apps/default/reports`;

interface ErrorBody {
  error: { code: string; message: string };
}

t.test("a create over the store's entry limit is a 413 that names it", async (t) => {
  const res = await postJson(`${app}/programs`, { open: true, inputs: { chunk: "x".repeat(100_000) } });
  t.equal(res.status, 413);
  const body = (await res.json()) as ErrorBody;
  t.match(body.error.message, /would take \d+ bytes in the shared program store, over its \d+-byte limit \(one NATS message/);
});

t.test("an extend that would take the spec over the limit is a 413, and the program keeps what it had", async (t) => {
  const created = await postJson(`${app}/programs`, { open: true, inputs: { first: "a".repeat(30_000) } });
  t.equal(created.status, 201, "a program within the limit is created");
  const { url, callsUrl } = (await created.json()) as { url: string; callsUrl: string };
  const grown = await postJson(`${stack.url(0)}${callsUrl}`, { inputs: { second: "b".repeat(10_000) }, calls: [{ id: "s", function: "summarize", inputs: { chunk: "second" }, outputs: { summary: "s_out" } }] });
  t.equal(grown.status, 200, "an extend within the limit is applied");
  const over = await postJson(`${stack.url(0)}${callsUrl}`, { inputs: { third: "c".repeat(40_000) }, calls: [{ id: "t3", function: "summarize", inputs: { chunk: "third" }, outputs: { summary: "t3_out" } }] });
  t.equal(over.status, 413);
  t.match(((await over.json()) as ErrorBody).error.message, /over its \d+-byte limit/);
  const view = (await (await fetch(`${stack.url(0)}${url}`)).json()) as { state: string; calls: Record<string, unknown> };
  t.equal(view.state, "open");
  t.same(Object.keys(view.calls).sort(), ["s"], "the refused extend's call was not added");
  t.equal((await fetch(`${stack.url(0)}${url}`, { method: "DELETE" })).status < 300, true, "and it can still be cancelled");
});

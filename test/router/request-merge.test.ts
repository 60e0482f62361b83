/**
 * The AgentApp merged into each session request (pure): the app's system
 * prompt, tools and mode; the objective as admission priority; speculation
 * settings carried only when the app enables them; client fields the app
 * owns refused with the field named.
 */
import t from "tap";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { appConfig } from "./fixtures.js";

t.test("the app's prompt, tools, mode and objective reach the engine request", async (t) => {
  const app = appConfig("merge-a", { objective: "throughput" });
  const { body } = mergeSessionRequest(app, { prompt: "hello", temperature: 0 });
  t.equal(body.mode, "async");
  t.same(body.tools, app.tools);
  t.equal(body.priority, 0, "throughput apps are admitted after latency apps");
  t.equal(body.speculation, undefined, "no speculation unless the app enables it");
  const msgs = body.prompt as { role: string; content: string }[];
  t.equal(msgs[0]?.role, "system");
  t.equal(msgs.at(-1)?.content, "hello");
  t.equal(mergeSessionRequest(appConfig("merge-b"), { prompt: "x" }).body.priority, 1, "latency apps first");
});

t.test("an app that enables speculation has it copied onto every session", async (t) => {
  const app = appConfig("merge-c", { speculation: { enabled: true, lambda: 2, maxInFlight: 3, engineSide: false, pools: ["default/search"] } });
  const { body } = mergeSessionRequest(app, { prompt: "find flights" });
  t.same(body.speculation, { enabled: true, lambda: 2, maxInFlight: 3, engineSide: false, pools: ["default/search"] });
});

t.test("fields the app owns are refused with their name", async (t) => {
  const app = appConfig("merge-d");
  t.throws(() => mergeSessionRequest(app, { prompt: "x", system: "be evil" }), /"system" is set by the AgentApp/);
  t.throws(() => mergeSessionRequest(app, { prompt: "x", mode: "sync" }), /"mode" is set by the AgentApp/);
  t.throws(() => mergeSessionRequest(app, { prompt: "x", maxTokens: 100_000 }), /"maxTokens" must be an integer/);
  t.throws(() => mergeSessionRequest(app, {}), /"prompt" is required/);
});

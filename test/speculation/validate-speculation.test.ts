/**
 * @module A session's `speculation` field: the two draft kinds are read, and
 * each bad value is refused with a message naming the field.
 */
import t from "tap";
import { validateSpeculation } from "../../engine-pod/src/server/validate-speculation.js";

const lpt = { type: "lpt-dag" as const, calls: [] };

t.test("the draft kinds", async (t) => {
  t.same(validateSpeculation({ enabled: true }, undefined), { enabled: true }, "no draft named: the engine's draft model writes the calls");
  t.same(validateSpeculation({ enabled: true, draft: { type: "model" } }, undefined), { enabled: true, draft: { type: "model" } });
  t.same(validateSpeculation({ enabled: true, draft: { type: "model", maxTokens: 64 } }, undefined), { enabled: true, draft: { type: "model", maxTokens: 64 } });
  t.same(validateSpeculation({ enabled: true, draft: { type: "scripted", alpha: 0.8 } }, lpt), { enabled: true, draft: { type: "scripted", alpha: 0.8 } });
});

t.test("bad drafts are refused, naming the field", async (t) => {
  t.throws(() => validateSpeculation({ enabled: true, draft: { type: "model", maxTokens: 4 } }, undefined), /speculation\.draft\.maxTokens/);
  t.throws(() => validateSpeculation({ enabled: true, draft: { type: "model", alpha: 1 } }, undefined), /speculation\.draft\.alpha/);
  t.throws(() => validateSpeculation({ enabled: true, draft: { type: "oracle" } }, undefined), /"type": "model"/);
  t.throws(() => validateSpeculation({ enabled: true, draft: { type: "scripted", alpha: 0.5 } }, undefined), /needs a scripted "lpt-dag" policy/);
});

/**
 * Prefix-hash chains: cut at the system prompt, the tool block and each user
 * turn; equal prefixes hash equally, a change invalidates everything after it.
 */
import t from "tap";
import { prefixHashChain, prefixSegments, residentPrefixLength, sessionMessages } from "../../common/src/index.js";

const tool = { name: "calc", description: "calculator", parameters: { type: "object", properties: { e: { type: "string" } } } };

t.test("segments: system, tools, then one per user turn", async (t) => {
  const segs = prefixSegments({
    messages: [
      { role: "system", content: "S" },
      { role: "user", content: "shot q" },
      { role: "assistant", content: "shot a" },
      { role: "user", content: "real q" },
    ],
    tools: [tool],
  });
  t.equal(segs.length, 4);
  t.match(segs[0], /^system/);
  t.match(segs[1], /^tools/);
  t.match(segs[2], /shot q.*shot a/s);
});

t.test("chains share exactly their common prefix", async (t) => {
  const a = prefixHashChain({ messages: sessionMessages("question one", "You are A."), tools: [tool] });
  const b = prefixHashChain({ messages: sessionMessages("question two", "You are A."), tools: [tool] });
  const c = prefixHashChain({ messages: sessionMessages("question one", "You are B."), tools: [tool] });
  t.equal(a.length, 3);
  t.equal(a[0], b[0]);
  t.equal(a[1], b[1]);
  t.not(a[2], b[2]);
  t.not(a[0], c[0]);
  t.not(a[1], c[1], "a chained hash covers everything before it");
  t.equal(residentPrefixLength(b, new Set(a)), 2);
  t.equal(residentPrefixLength(a, new Set(a)), 3);
  t.equal(residentPrefixLength(c, new Set(a)), 0);
});

t.test("tool schemas hash by content, not key order", async (t) => {
  const reordered = { parameters: { properties: { e: { type: "string" } }, type: "object" }, description: "calculator", name: "calc", pool: { namespace: "x", name: "y" } };
  const m = sessionMessages("q", "S");
  t.same(prefixHashChain({ messages: m, tools: [tool] }), prefixHashChain({ messages: m, tools: [reordered] }));
});

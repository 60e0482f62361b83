/**
 * A session's tools on an engine that routes calls over NATS: a tool naming
 * a pool of the engine's own namespace is accepted; one naming another
 * namespace's pool is refused when the session is created (400
 * unknown_tool, saying why), because that pool's runners answer only into
 * their own namespace and the call would wait out its deadline.
 */
import t from "tap";
import { resolveSessionTools, type ToolCatalog } from "../../engine-pod/src/server/resolve-tools.js";
import { HttpError } from "../../engine-pod/src/server/http-errors.js";

const catalog: ToolCatalog = { builtins: new Map(), pools: true, namespace: "default" };
const tool = (namespace: string): unknown => ({ name: "lookup", description: "looks up", parameters: { type: "object" }, pool: { namespace, name: "tools" } });

t.test("a pool of the engine's own namespace is accepted", async (t) => {
  t.same(
    resolveSessionTools([tool("default")], catalog).map((s) => s.pool),
    [{ namespace: "default", name: "tools" }],
  );
});

t.test("another namespace's pool is refused with the reason", async (t) => {
  let thrown: unknown;
  try {
    resolveSessionTools([tool("bench")], catalog);
  } catch (err) {
    thrown = err;
  }
  t.ok(thrown instanceof HttpError, "an HTTP error");
  const err = thrown as HttpError;
  t.equal(err.status, 400);
  t.equal(err.code, "unknown_tool");
  t.match(err.message, /names pool bench\/tools, but this engine pod is in namespace "default": runners answer only into their own namespace/);
});

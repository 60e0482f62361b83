/**
 * `GET /openapi.json` documents exactly the routes the engine pod's express
 * app mounts: every mounted (method, path) is in the document and every
 * documented operation is mounted.
 */
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { EngineMetrics } from "../../engine-pod/src/metrics/index.js";
import { createSessionBodySchema } from "../../common/src/wire/index.js";
import { DEFAULT_SERVER_LIMITS, EngineServer } from "../../engine-pod/src/server/index.js";
import { OPENAPI_DOCUMENT } from "../../engine-pod/src/server/openapi.js";

t.test("the OpenAPI document matches the mounted routes", async (t) => {
  const server = new EngineServer({ catalog: { builtins: new Map(), pools: false }, limits: DEFAULT_SERVER_LIMITS, metrics: new EngineMetrics(), log: createLogger("openapi-test", "silent") });
  const port = await server.listen(0, "127.0.0.1");
  t.teardown(() => server.close());
  const res = await fetch(`http://127.0.0.1:${port}/openapi.json`);
  t.equal(res.status, 200);
  const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
  t.equal(doc.openapi, "3.1.0");
  const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  // express 5: the app's router stack holds one layer per mounted route.
  const stack = (server.app as unknown as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }).router.stack;
  const mounted = stack
    .flatMap((layer) => (layer.route === undefined ? [] : Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path.replace(/:(\w+)/g, "{$1}")}`)))
    .sort();
  t.ok(mounted.length >= 9, `routes found: ${mounted.join(", ")}`);
  t.same(documented, mounted);
});

t.test("the session request documents responseFormat, from the schema the engine validates it by", async (t) => {
  const documented = (OPENAPI_DOCUMENT.components.schemas.CreateSessionRequest as { properties: Record<string, unknown> }).properties;
  t.ok(documented["responseFormat"] !== undefined, "listed");
  t.equal(documented["responseFormat"], (createSessionBodySchema["properties"] as Record<string, unknown>)["responseFormat"], "the same schema object");
});

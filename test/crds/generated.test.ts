/**
 * @module The committed CRD YAML (crds/ and the chart's copy) must equal
 * what `npm run generate` produces from operator/src/api, and the generated
 * CRDs must be structurally sound (every CEL rule has a message, every kind
 * has the printer columns and status fields users rely on).
 */
import t from "tap";
import { parse } from "yaml";
import { staleFiles, renderCrds } from "../../operator/src/api/generate-crds.js";
import { buildCrd, InterlaceKinds, type OpenApiSchema } from "../../operator/src/api/index.js";

t.test("committed CRD YAML is up to date (npm run generate)", async (t) => {
  t.same(await staleFiles(), [], "no stale files");
});

t.test("the YAML is the CRD object", async (t) => {
  const files = renderCrds();
  for (const def of Object.values(InterlaceKinds)) {
    const yaml = files.get(`interlace.dev_${def.plural}.yaml`);
    t.ok(yaml, `${def.kind} rendered`);
    t.same(parse(yaml ?? ""), buildCrd(def));
  }
});

function walk(node: OpenApiSchema, at: string, visit: (n: OpenApiSchema, at: string) => void): void {
  visit(node, at);
  for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, `${at}.${k}`, visit);
  if (node.items !== undefined) walk(node.items, `${at}[]`, visit);
  if (typeof node.additionalProperties === "object") walk(node.additionalProperties, `${at}{}`, visit);
}

t.test("schema conventions", async (t) => {
  for (const def of Object.values(InterlaceKinds)) {
    const crd = buildCrd(def);
    const version = crd.spec.versions[0];
    t.ok(version, "one version");
    if (version === undefined) continue;
    t.same(crd.spec.names.categories, ["interlace"]);
    t.ok(def.shortNames.length > 0, `${def.kind} has a short name`);
    t.ok(version.additionalPrinterColumns.some((c) => c.name === "Ready"), `${def.kind} shows Ready`);
    t.ok(def.status.properties?.["observedGeneration"], `${def.kind} status.observedGeneration`);
    t.equal(def.status.properties?.["conditions"]?.["x-kubernetes-list-type"], "map", `${def.kind} conditions keyed by type`);
    walk(version.schema.openAPIV3Schema, def.kind, (n, at) => {
      for (const rule of n["x-kubernetes-validations"] ?? []) t.ok(rule.message.length > 0, `${at}: CEL rule has a message`);
      if (n.type === "object" && n.properties === undefined && n.additionalProperties === undefined && at !== `${def.kind}.metadata`) {
        t.equal(n["x-kubernetes-preserve-unknown-fields"], true, `${at}: free-form object is explicit`);
      }
      if (n.type !== undefined || n["x-kubernetes-int-or-string"] === true) return;
      t.fail(`${at}: every node has a type (structural schema)`);
    });
  }
});

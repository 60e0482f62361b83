/**
 * @module `responseFormat` on `POST /v1/sessions` (real engine on the `test`
 * model): the field passes the request schema, the `done` event read over
 * SSE carries the answer as JSON of the schema, and a malformed format is a
 * 400 naming the field. (Seed 2: the `test` model's byte tokens can spell
 * an overlong UTF-8 character, which llama.cpp's grammar counts as one
 * character and JavaScript decodes as two U+FFFD, so a `maxLength` can look
 * broken; seed 3 does that here. The shared JSON grammar's limit, not this
 * field's.)
 */
import t, { type Test } from "tap";
import type { JsonSchema } from "../../common/src/index.js";
import { compileSchema } from "../../common/src/wire/validator.js";
import { ofType, postJson, readSession, startTestPod } from "./helpers.js";

const { base } = await startTestPod(t);
const create = (body: unknown): Promise<Response> => postJson(`${base}/v1/sessions`, body);

async function expectBadRequest(t: Test, res: Response, message: RegExp): Promise<void> {
  t.equal(res.status, 400);
  const body = (await res.json()) as { error?: { code?: string; message?: string } };
  t.equal(body.error?.code, "bad_request");
  t.match(body.error?.message, message);
}

const PLAN: JsonSchema = {
  type: "object",
  properties: { title: { type: "string", maxLength: 10 }, steps: { type: "array", maxItems: 2, items: { type: "object", properties: { n: { type: "integer" }, done: { type: "boolean" } }, required: ["n", "done"] } } },
  required: ["title", "steps"],
};

t.test("the done event carries the answer as JSON of the schema", async (t) => {
  const res = await create({ prompt: "a plan", mode: "sync", temperature: 1, seed: 2, maxTokens: 300, responseFormat: { type: "json_schema", json_schema: { name: "plan", schema: PLAN } } });
  t.equal(res.status, 201);
  const { id } = (await res.json()) as { id: string };
  const done = ofType(await readSession(base, id), "done")[0];
  t.equal(done?.reason, "eos");
  const checked = compileSchema<unknown>(PLAN, "answer")(JSON.parse(done?.answer ?? ""));
  t.ok(checked.ok, checked.ok ? `validates: ${done?.answer}` : `${checked.error}: ${JSON.stringify(done?.answer)}`);
});

t.test("a malformed response format → 400 naming the field", async (t) => {
  const body = (responseFormat: unknown): unknown => ({ prompt: "x", tools: ["echo"], responseFormat });
  await expectBadRequest(t, await create(body({ type: "xml" })), /"responseFormat.type" must be one of "text", "json_object", "json_schema"/);
  await expectBadRequest(t, await create(body({ type: "json_schema" })), /"responseFormat.json_schema" is required/);
  await expectBadRequest(t, await create(body({ type: "json_schema", json_schema: { name: "x", schema: "an object" } })), /"responseFormat.json_schema.schema" must be a JSON Schema object/);
  await expectBadRequest(t, await create(body({ type: "json_schema", json_schema: { name: "no spaces", schema: {} } })), /"responseFormat.json_schema.name" must be 1 to 64 letters, digits, _ or -/);
  await expectBadRequest(t, await create(body({ type: "json_schema", json_schema: { name: "x", schema: { $ref: "#/definitions/gone" } } })), /responseFormat.json_schema.schema.*"\$ref" #\/definitions\/gone does not name one of the schema's own \$defs/);
  await expectBadRequest(t, await create(body({ type: "json_object", json_schema: { name: "x", schema: {} } })), /"responseFormat.json_schema" is not allowed here/);
  await expectBadRequest(
    t,
    await create({ prompt: "x", tools: ["echo"], responseFormat: { type: "json_object" }, policy: { type: "text", pieces: ["{}"] } }),
    /responseFormat applies to the model's own answer: not with a scripted policy/,
  );
});

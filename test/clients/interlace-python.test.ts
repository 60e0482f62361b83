/**
 * Interlace's Python client (`clients/python`, installed from the checkout
 * into a venv by `hack/tools/76-interlace-python.sh`) against a real router
 * with two real engines and a real nats-server: its pytest suite (programs
 * written with the decorator, functions only in code, errors naming the
 * failing call, cancel mid-program, sessions with user interrupts and cached
 * tool outputs, the asyncio client), `mypy --strict` over the package and its
 * tests, and every Python example of the README. Afterwards the engines are
 * idle: cancelled programs and sessions left nothing running.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { eventually } from "../helpers/wait.js";
import { ALICE_KEY, APP, BOB_KEY, readmeExamples, ROOT, startClientStack } from "./interlace-stack.js";

t.setTimeout(600_000);

const cache = process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache");
const venv = join(cache, "venv/interlace-python/bin");
// Idempotent: a no-op unless the client's sources changed since the venv's build.
const installed = spawnSync("bash", [join(ROOT, "hack/tools/76-interlace-python.sh")], { stdio: "inherit" });
if (installed.status !== 0) throw new Error(`hack/tools/76-interlace-python.sh failed (exit ${installed.status})`);

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: join(ROOT, "clients/python"), env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    child.once("exit", (code) => resolve({ code, out }));
  });
}

const { url, idle } = await startClientStack(t);
const env = { INTERLACE_URL: url, INTERLACE_APP: APP, INTERLACE_API_KEY: ALICE_KEY, INTERLACE_OTHER_API_KEY: BOB_KEY };

t.test("mypy --strict: the package and its tests type-check", async (t) => {
  const r = await run(join(venv, "mypy"), ["src", "tests"], { MYPYPATH: "tests" });
  t.equal(r.code, 0, r.out);
});

t.test("the pytest suite against the real router", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-pytest-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const junit = join(dir, "junit.xml");
  const r = await run(join(venv, "python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", `--junitxml=${junit}`], env);
  t.equal(r.code, 0, r.out);
  const report = readFileSync(junit, "utf8");
  const counts = /<testsuite [^>]*errors="(\d+)" failures="(\d+)" skipped="(\d+)" tests="(\d+)"/.exec(report);
  t.ok(counts !== null, "pytest wrote its report");
  const [errors, failures, skipped, tests] = counts!.slice(1).map(Number);
  t.same({ errors, failures, skipped }, { errors: 0, failures: 0, skipped: 0 });
  t.ok(tests! >= 13, `pytest ran ${tests} tests`);
});

t.test("the README's Python examples run", async (t) => {
  const examples = readmeExamples("python");
  t.ok(examples.length >= 2, `${examples.length} examples found`);
  const dir = mkdtempSync(join(tmpdir(), "interlace-readme-py-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [i, code] of examples.entries()) {
    const file = join(dir, `example_${i}.py`);
    writeFileSync(file, code);
    const r = await run(join(venv, "python"), [file], env);
    t.equal(r.code, 0, `example ${i}:\n${code}\n${r.out}`);
  }
});

t.test("nothing is left running on the engines", async (t) => {
  t.ok(await eventually(idle, 15_000), "every engine sequence is free");
});

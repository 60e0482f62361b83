/**
 * The wire protocol's pure parts: subject-token encoding (any session id,
 * pod or tool name becomes one token and back), subject parsing, message
 * validation at both ends, and the runner spec file.
 */
import t from "tap";
import {
  decodeToken,
  encodeToken,
  interruptSubject,
  intrStream,
  parseCallMessage,
  parseInterruptSubject,
  parseIntrMessage,
  parseRunnerKey,
  poolStream,
  PROTOCOL_VERSION,
  runnerKey,
  toolFromSubject,
  toolSubject,
} from "../../common/src/protocol/index.js";
import { parseRunnerConfig } from "../../toolrunner/src/spec-file.js";
import { truncateOutput } from "../../toolrunner/src/truncate.js";

t.test("subject tokens round-trip any string", async (t) => {
  for (const s of ["plain", "with.dots", "a*b>c", "spaces and\ttabs", "ünïcödé ✓", "", "=00", "100%"]) {
    const token = encodeToken(s);
    t.match(token, /^[A-Za-z0-9_=-]+$/, `${JSON.stringify(s)} → one safe token`);
    t.equal(decodeToken(token), s);
  }
  t.throws(() => decodeToken("bad%token"));
});

t.test("subjects", async (t) => {
  const pool = { namespace: "team-a", name: "search" };
  t.equal(toolSubject(pool, "web.search"), "interlace.tools.team-a.search.web=2Esearch");
  t.equal(toolFromSubject(pool, toolSubject(pool, "web.search")), "web.search");
  t.equal(toolFromSubject({ namespace: "team-a", name: "other" }, toolSubject(pool, "x")), null);
  t.equal(poolStream(pool), "INTERLACE_TOOLS_team-a_search");
  t.same(parseInterruptSubject(interruptSubject({ namespace: "team-a", pod: "engine-0" }, "s.1")), { namespace: "team-a", enginePod: "engine-0", sessionId: "s.1" });
  t.equal(interruptSubject({ namespace: "team-a", pod: "engine-0" }, "s.1"), "interlace.intr.team-a.engine-0.s=2E1", "the namespace is the subject's first variable token");
  t.equal(intrStream("team-a"), "INTERLACE_INTR_team-a", "one interrupt stream per namespace");
  t.equal(parseInterruptSubject("interlace.intr.engine-0.s1"), null, "a pre-namespace subject is not an interrupt subject");
  t.equal(parseInterruptSubject("interlace.tools.a.b.c"), null);
  t.same(parseRunnerKey(runnerKey(pool, "pod-1")), { pool, runnerId: "pod-1" });
});

t.test("call messages are validated", async (t) => {
  const good = { v: PROTOCOL_VERSION, callId: "c1", sessionId: "s", tool: "echo", arguments: {}, deadline: 1, replyTo: "interlace.intr.ns.p.s", publishedAt: 0 };
  t.ok(parseCallMessage(JSON.stringify(good)).ok);
  const r = parseCallMessage(JSON.stringify({ ...good, v: 99, arguments: [] }));
  t.equal(r.ok, false);
  if (!r.ok) t.match(r.error, /"v" must be 2.*"arguments" must be object/);
  const bad = parseCallMessage("{");
  t.equal(bad.ok, false);
  if (!bad.ok) t.match(bad.error, /not valid JSON/);
  t.equal(parseCallMessage(JSON.stringify({ ...good, replyTo: "elsewhere.x" })).ok, false, "results only go to interrupt subjects");
  t.equal(parseCallMessage(JSON.stringify({ ...good, replyTo: "interlace.intr.p.s" })).ok, false, "a reply address without a namespace (protocol 1) is refused");
});

t.test("interrupt-subject messages are validated", async (t) => {
  t.ok(parseIntrMessage(JSON.stringify({ v: PROTOCOL_VERSION, type: "interrupt", sessionId: "s", kind: "user", value: "hi" })).ok);
  const wrongKind = parseIntrMessage(JSON.stringify({ v: PROTOCOL_VERSION, type: "interrupt", sessionId: "s", kind: "tool_result", value: "hi" }));
  t.equal(wrongKind.ok, false);
  const unknown = parseIntrMessage(JSON.stringify({ v: PROTOCOL_VERSION, type: "other" }));
  t.equal(unknown.ok, false);
  if (!unknown.ok) t.match(unknown.error, /must be "result" or "interrupt"/);
});

t.test("runner spec file", async (t) => {
  const yaml = `
namespace: default
pool: tools
concurrency: 4
tools:
  - name: echo
    description: echoes
    parameters: { type: object }
    implementation: { type: builtin }
  - name: search
    description: searches
    parameters: { type: object }
    idempotent: true
    implementation: { type: http, url: "http://search.svc/run" }
`;
  const config = parseRunnerConfig(yaml);
  t.equal(config.tools.length, 2);
  t.equal(config.tools[1]?.implementation.type, "http");
  t.throws(() => parseRunnerConfig("namespace: default\npool: tools\ntools: []\n"), /"tools" must NOT have fewer than 1 items/);
  t.throws(() => parseRunnerConfig(yaml.replace("type: http", "type: ftp")), /"tools\[1\]\.implementation/);
});

t.test("results over the cap are truncated at a character boundary with a marker", async (t) => {
  t.same(truncateOutput("short", 100), { text: "short", truncated: false });
  const cut = truncateOutput("ééééé", 5); // 10 bytes; 5 would split the third é
  t.equal(cut.truncated, true);
  t.equal(cut.text, "éé\n[truncated: 10 bytes, cap 5]");
});

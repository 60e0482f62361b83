import t from "tap";
import { CML, type CmlMarker } from "../../common/src/index.js";
import { createTokenMonitor, type MonitorEvent, type TokenMonitor } from "../../engine-pod/src/cml/index.js";

/** Merges adjacent text events so different tokenisations compare equal. */
function normalize(events: MonitorEvent[]): MonitorEvent[] {
  const out: MonitorEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.type === "text" && last?.type === "text") last.text += e.text;
    else out.push({ ...e });
  }
  return out;
}

function runText(pieces: string[], m: TokenMonitor = createTokenMonitor()): MonitorEvent[] {
  const events: MonitorEvent[] = [];
  for (const p of pieces) events.push(...m.push(0, p));
  events.push(...m.flush());
  return normalize(events);
}

/** Seeded PRNG (mulberry32) so random splits are reproducible. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function splitAt(s: string, cuts: number[]): string[] {
  const out: string[] = [];
  let prev = 0;
  for (const c of [...cuts].sort((a, b) => a - b)) {
    out.push(s.slice(prev, c));
    prev = c;
  }
  out.push(s.slice(prev));
  return out.filter((p) => p !== "");
}

/** Every way to cut `s` into non-empty tokens (2^(n-1)). */
function* allSplits(s: string): Generator<string[]> {
  const n = s.length;
  for (let mask = 0; mask < 1 << (n - 1); mask++) {
    const cuts: number[] = [];
    for (let i = 0; i < n - 1; i++) if (mask & (1 << i)) cuts.push(i + 1);
    yield splitAt(s, cuts);
  }
}

/** Positions (exclusive end offsets) where a critical section is open, from the transcript itself. */
function criticalAt(s: string): (pos: number) => boolean {
  const spans: [number, number][] = [];
  const re = /\[(CALL|TRAP)\][\s\S]*?\[END\]/g;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) spans.push([m.index + 6, m.index + m[0].length]);
  // Critical once the opening marker is complete, until the closing marker is complete.
  return (pos) => spans.some(([a, b]) => pos >= a && pos < b);
}

const TRANSCRIPT = `Plan: [CALL]c1[HEAD]{"name": "a", "arguments": {"x": [1]}}[END] then [CALL]b(y='[z')[END]ok [TRAP][END]done`;
const EXPECTED: MonitorEvent[] = [
  { type: "text", text: "Plan: " },
  { type: "call_start" },
  { type: "call", id: "c1", body: '{"name": "a", "arguments": {"x": [1]}}' },
  { type: "text", text: " then " },
  { type: "call_start" },
  { type: "call", body: "b(y='[z')" },
  { type: "text", text: "ok " },
  { type: "trap" },
  { type: "text", text: "done" },
];

t.test("text markers: whole transcript in one piece", async (t) => {
  t.same(runText([TRANSCRIPT]), EXPECTED);
});

t.test("text markers: every split of short blocks gives the same events", async (t) => {
  const cases: [string, MonitorEvent[]][] = [
    ["[CALL]x()[END]", [{ type: "call_start" }, { type: "call", body: "x()" }]],
    ["a[CALL]i[HEAD]b[END]", [{ type: "text", text: "a" }, { type: "call_start" }, { type: "call", id: "i", body: "b" }]],
    ["[TRAP] [END]z", [{ type: "trap" }, { type: "text", text: "z" }]],
    ["[[CAL[END", [{ type: "text", text: "[[CAL[END" }]],
  ];
  for (const [s, expected] of cases) {
    let n = 0;
    for (const pieces of allSplits(s)) {
      const got = runText(pieces);
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        t.same(got, expected, `split ${JSON.stringify(pieces)}`);
        return;
      }
      n++;
    }
    t.equal(n, 2 ** (s.length - 1), `all ${n} splits of ${s}`);
  }
});

t.test("text markers: all 1- and 2-cut splits and seeded random splits of a long transcript", async (t) => {
  const n = TRANSCRIPT.length;
  const splits: string[][] = [];
  for (let i = 1; i < n; i++) for (let j = i; j < n; j++) splits.push(splitAt(TRANSCRIPT, [i, j]));
  const rand = rng(42);
  for (let k = 0; k < 500; k++) {
    const cuts: number[] = [];
    for (let i = 1; i < n; i++) if (rand() < 0.4) cuts.push(i);
    splits.push(splitAt(TRANSCRIPT, cuts));
  }
  // Character by character, and "[" "CALL" "]" style (brackets as their own tokens).
  splits.push([...TRANSCRIPT]);
  splits.push(TRANSCRIPT.split(/(\[|\])/).filter((p) => p !== ""));
  let bad = 0;
  for (const pieces of splits) if (JSON.stringify(runText(pieces)) !== JSON.stringify(EXPECTED)) bad++;
  t.equal(bad, 0, `${splits.length} splits all give the expected events`);
});

t.test("text markers: inCriticalSection is true exactly between [CALL]/[TRAP] and [END]", async (t) => {
  const critical = criticalAt(TRANSCRIPT);
  const rand = rng(7);
  for (let k = 0; k < 200; k++) {
    const cuts: number[] = [];
    for (let i = 1; i < TRANSCRIPT.length; i++) if (rand() < 0.5) cuts.push(i);
    const m = createTokenMonitor();
    let pos = 0;
    for (const p of splitAt(TRANSCRIPT, cuts)) {
      m.push(0, p);
      pos += p.length;
      if (m.inCriticalSection !== critical(pos)) {
        t.fail(`at offset ${pos} (after ${JSON.stringify(p)}): inCriticalSection=${m.inCriticalSection}`);
        return;
      }
    }
  }
  t.pass("200 random tokenisations agree with the transcript's block spans");
});

t.test("text markers: partial markers are held back, released when they cannot be one", async (t) => {
  const m = createTokenMonitor();
  t.same(m.push(0, "x [CA"), [{ type: "text", text: "x " }]);
  t.equal(m.heldText, "[CA");
  t.equal(m.safeToInject, false, "not safe to inject while a marker may be forming");
  t.same(m.push(0, "T"), [{ type: "text", text: "[CAT" }]);
  t.equal(m.safeToInject, true);
  t.same(m.push(0, "[EN"), []);
  t.same(m.flush(), [{ type: "text", text: "[EN" }], "flush releases held text at EOS");
});

const IDS = new Map<number, CmlMarker>([
  [1, CML.CALL], [2, CML.INTR], [3, CML.TRAP], [4, CML.END], [5, CML.HEAD],
]);
const TOK: Record<string, number> = { "[CALL]": 1, "[INTR]": 2, "[TRAP]": 3, "[END]": 4, "[HEAD]": 5 };

function runTokens(items: string[], m: TokenMonitor = createTokenMonitor({ markerTokens: IDS })): MonitorEvent[] {
  const events: MonitorEvent[] = [];
  for (const s of items) events.push(...m.push(TOK[s] ?? 100, s));
  events.push(...m.flush());
  return normalize(events);
}

t.test("control tokens: blocks, and critical section exactly between [CALL] and [END]", async (t) => {
  const m = createTokenMonitor({ markerTokens: IDS });
  const seq = ["hi ", "[CALL]", "c", "7", "[HEAD]", '{"name"', ':"a"}', "[END]", " bye"];
  const crit: boolean[] = [];
  const events: MonitorEvent[] = [];
  for (const s of seq) {
    events.push(...m.push(TOK[s] ?? 100, s));
    crit.push(m.inCriticalSection);
  }
  t.same(crit, [false, true, true, true, true, true, true, false, false]);
  t.same(normalize(events), [
    { type: "text", text: "hi " },
    { type: "call_start" },
    { type: "call", id: "c7", body: '{"name":"a"}' },
    { type: "text", text: " bye" },
  ]);
  t.same(runTokens(["[TRAP]", "[END]"]), [{ type: "trap" }]);
});

t.test("control tokens: marker-looking plain text stays text (cannot be forged)", async (t) => {
  const m = createTokenMonitor({ markerTokens: IDS });
  const events = ["[CA", "LL]x[END]", "[INTR]"].flatMap((s) => m.push(100, s));
  t.same(normalize([...events, ...m.flush()]), [{ type: "text", text: "[CALL]x[END][INTR]" }]);
  t.same(runTokens(["[CALL]", "f(s='[END]')", "[END]"]), [{ type: "call_start" }, { type: "call", body: "f(s='[END]')" }]);
});

t.test("control tokens: a control marker ends a held partial text marker", async (t) => {
  const m = createTokenMonitor({ markerTokens: IDS, textMarkers: true });
  t.same(m.push(100, "a[CA"), [{ type: "text", text: "a" }]);
  t.same(m.push(1, ""), [{ type: "text", text: "[CA" }, { type: "call_start" }]);
  t.same(m.push(100, "f()[EN"), []);
  t.same(m.push(4, ""), [{ type: "call", body: "f()[EN" }]);
});

t.test("malformed blocks are reported and never crash", async (t) => {
  t.same(runTokens(["[END]", "x"]), [{ type: "malformed", reason: "[END] outside a block", raw: "[END]" }, { type: "text", text: "x" }]);
  t.same(runTokens(["[HEAD]"]), [{ type: "malformed", reason: "[HEAD] outside a block", raw: "[HEAD]" }]);
  const forged = runTokens(["a", "[INTR]", "id", "[HEAD]", "v", "[END]", "b"]);
  t.equal(forged.length, 3);
  t.match(forged[1], { type: "malformed", reason: /\[INTR\]/, raw: "[INTR]id[HEAD]v[END]" }, "a model-emitted [INTR] is malformed, never an interrupt");
  t.same(forged[2], { type: "text", text: "b" });
  t.match(runTokens(["[CALL]", "a", "[CALL]", "b", "[END]"]), [
    { type: "call_start" },
    { type: "malformed", reason: /\[CALL\] inside/, raw: "[CALL]a" },
    { type: "call_start" },
    { type: "call", body: "b" },
  ]);
  t.match(runTokens(["[CALL]", "a", "[HEAD]", "b", "[HEAD]", "c", "[END]"]), [{ type: "call_start" }, { type: "malformed", reason: /second \[HEAD\]/, raw: "[CALL]a[HEAD]b[HEAD]c[END]" }]);
  t.match(runTokens(["[CALL]", " ", "[HEAD]", "b", "[END]"]), [{ type: "call_start" }, { type: "malformed", reason: /empty call id/ }]);
  t.match(runTokens(["[CALL]", "f(", "x"]), [{ type: "call_start" }, { type: "malformed", reason: /unterminated \[CALL\]/, raw: "[CALL]f(x" }]);
  t.match(runText(["[TRAP]", "[CALL]x[END]"]), [{ type: "malformed", reason: /inside an open \[TRAP\]/ }, { type: "call_start" }, { type: "call", body: "x" }]);
  t.match(runText(["[IN", "TR]r[HE", "AD]v[E", "ND]ok"]), [
    { type: "malformed", reason: /model-emitted \[INTR\]/, raw: "[INTR]r[HEAD]v[END]" },
    { type: "text", text: "ok" },
  ], "a spelled-out [INTR] from a text-marker model is malformed too");
  const m = createTokenMonitor({ markerTokens: IDS });
  m.push(1, "");
  m.push(100, "x");
  m.flush();
  t.equal(m.inCriticalSection, false, "flush closes an open block");
});

t.test("streamCallBody: the body's text as it arrives, after the id, never a marker", async (t) => {
  const stream = (pieces: string[]): MonitorEvent[] => runText(pieces, createTokenMonitor({ streamCallBody: true }));
  t.same(stream(["ok [CALL] c1 [HE", "AD] {\"a\":", " 1} [END] done"]), [
    { type: "text", text: "ok " },
    { type: "call_start" },
    { type: "call_body", id: "c1" },
    { type: "call_text", text: " {\"a\":" },
    { type: "call_text", text: " 1} " },
    { type: "call", id: "c1", body: " {\"a\": 1} " },
    { type: "text", text: " done" },
  ]);
  t.same(stream(["[CALL]", " {\"n", "ame\"", "}[END]"]), [
    { type: "call_start" },
    { type: "call_body" },
    { type: "call_text", text: "{\"n" },
    { type: "call_text", text: "ame\"" },
    { type: "call_text", text: "}" },
    { type: "call", body: " {\"name\"}" },
  ], "without an id the body opens at its first brace");
  t.same(stream(["[CALL]", "f", "(x=1)[END]"]).slice(1, 3), [{ type: "call_body" }, { type: "call_text", text: "f(x=1)" }], "or at a Python call's parenthesis");
  t.same(runText(["[CALL] c1 [HEAD] {} [END]"]).map((e) => e.type), ["call_start", "call"], "off by default");
});

/**
 * @module The log-probability bookkeeping on its own: a step's distribution
 * with the temperature divided back out, and the ledger that gives each
 * content token the text it put in the content through the hold-backs
 * (an incomplete character, a stop sequence, the end's flush).
 */
import t from "tap";
import { LogprobLedger } from "../../engine-pod/src/engine/logprob-ledger.js";
import { TokenDistribution, ZERO_PROBABILITY_LOGPROB } from "../../engine-pod/src/engine/token-distribution.js";
import type { Token } from "node-llama-cpp";

const tok = (n: number): Token => n as Token;
/** Probabilities of logits under a temperature (softmax(l / T)), most likely first, as node-llama-cpp returns them. */
function softmax(logits: number[], temperature: number): Map<Token, number> {
  const scaled = logits.map((l) => l / temperature);
  const max = Math.max(...scaled);
  const exp = scaled.map((v) => Math.exp(v - max));
  const sum = exp.reduce((a, b) => a + b, 0);
  return new Map(exp.map((e, i) => [tok(i), e / sum] as const).sort((a, b) => b[1] - a[1]));
}

t.test("the distribution: the model's log-probabilities whatever the temperature", async (t) => {
  const logits = [2, 0.5, -1, 1.2];
  const raw = softmax(logits, 1);
  for (const temperature of [0.3, 0.7, 1, 1.8]) {
    const d = new TokenDistribution(softmax(logits, temperature), temperature);
    for (const [token, p] of raw) t.ok(Math.abs(d.logprob(token) - Math.log(p)) < 1e-9, `T=${temperature}, token ${token}`);
    t.same(
      d.top(3).map((a) => a.token),
      [0, 3, 1],
      "top: most likely first",
    );
  }
  const greedy = new TokenDistribution(new Map([[tok(5), 1], [tok(6), 0]]), 0);
  t.equal(greedy.logprob(tok(5)), 0);
  t.equal(greedy.logprob(tok(6)), ZERO_PROBABILITY_LOGPROB, "probability 0 (a grammar-forbidden token) reads -9999, not -Infinity");
  t.equal(greedy.logprob(tok(7)), ZERO_PROBABILITY_LOGPROB, "a token outside the distribution too");
  t.equal(greedy.top(5).length, 2, "no more alternatives than the distribution has");
  t.same(greedy.top(0), []);
});

const d = new TokenDistribution(new Map([[tok(1), 0.5], [tok(2), 0.3], [tok(3), 0.2]]), 0);
const ledger = (top = 1): LogprobLedger => new LogprobLedger(top, (token) => `<${token}>`);

t.test("each token's text, in order, through the stream's hold-backs", async (t) => {
  const l = ledger(2);
  l.add(tok(1), d, 3);
  l.consume("abc", false);
  t.same(l.drain().map((e) => e.token), ["abc"], "settled with its text");
  // A token that completes no character, then the one that completes it.
  l.add(tok(2), d, 0);
  t.same(l.drain(), [], "held: not settled while it is the last token");
  l.add(tok(3), d, 1);
  l.consume("é", false);
  const drained = l.drain();
  t.same(
    drained.map((e) => [e.token, e.bytes]),
    [
      ["", []],
      ["é", [0xc3, 0xa9]],
    ],
  );
  t.same(drained[1]!.topLogprobs, [
    { token: "<1>", logprob: Math.log(0.5), bytes: [...Buffer.from("<1>")] },
    { token: "<2>", logprob: Math.log(0.3), bytes: [...Buffer.from("<2>")] },
  ]);
  t.equal(drained[1]!.logprob, Math.log(0.2), "the emitted token's own logprob");
  l.end();
  t.equal(l.entries.map((e) => e.token).join(""), "abcé");
});

t.test("a stop sequence: text the stop filter holds fills claims later; the cut token keeps its part; later tokens go", async (t) => {
  const l = ledger();
  l.add(tok(1), d, 4); // "ab\n\n" of which the stop filter passes "ab" now
  l.consume("ab", false);
  t.same(l.drain(), [], "a token whose text is partly held is not settled yet");
  l.add(tok(2), d, 2);
  l.consume("", true); // the stop sequence matched inside the held text
  l.add(tok(3), d, 1);
  t.same(l.entries.map((e) => e.token), ["ab"], "cut at the stop; the tokens after it dropped");
});

t.test("text no token claimed (the end's flush) is the last token's", async (t) => {
  const l = ledger();
  l.add(tok(1), d, 1);
  l.consume("x", false);
  l.add(tok(2), d, 0); // its bytes still held when the completion ends
  l.consume("\uFFFD", false);
  l.end();
  t.same(l.entries.map((e) => e.token), ["x", "\uFFFD"]);
  const m = ledger();
  m.add(tok(1), d, 2);
  m.consume("ab", false);
  m.drain();
  m.consume("[", false);
  m.end();
  t.same(m.entries.map((e) => e.token), ["ab["], "after the last token settled: the entries still add up to the content");
  const n = ledger();
  n.add(tok(1), d, 2);
  n.add(tok(2), d, 0);
  n.end();
  t.same(n.entries, [], "claims never filled (the turn ended at the token) and empty trailing tokens are dropped");
});

/**
 * @module The decode-rate window (pure, injected clock): a rate over the last
 * window only, older counts dropped.
 */
import t from "tap";
import { RateWindow } from "../../engine-pod/src/engine/rate-window.js";

t.test("tokens per second over the window; old counts fall out", async (t) => {
  let now = 0;
  const w = new RateWindow(1000, () => now);
  t.equal(w.perSecond(), 0, "nothing recorded");
  for (let i = 0; i < 10; i++) {
    now += 50;
    w.record(4);
  }
  t.equal(w.perSecond(), 40, "40 tokens in the last second");
  now += 2000;
  t.equal(w.perSecond(), 0, "a quiet window reads 0");
  w.record(7);
  t.equal(w.perSecond(), 7);
});

import t from "tap";
import { parsePickTiming, pickTiming } from "../../router/src/server-timing.js";

t.test("a pick's Server-Timing entry reads back as written", async (t) => {
  t.equal(pickTiming(1.23456), 'pick;dur=1.235;desc="placement"');
  t.equal(parsePickTiming(pickTiming(0.5)), 0.5);
  t.equal(pickTiming(-1), 'pick;dur=0.000;desc="placement"', "clock skew never gives a negative pick");
});

t.test("the pick is found among other entries, and only a well-formed one counts", async (t) => {
  t.equal(parsePickTiming('db;dur=53, pick;dur=2.5;desc="placement", app;dur=47.2'), 2.5);
  t.equal(parsePickTiming("db;dur=53"), undefined);
  t.equal(parsePickTiming("pick"), undefined);
  t.equal(parsePickTiming("pick;dur=abc"), undefined);
  t.equal(parsePickTiming(null), undefined);
});

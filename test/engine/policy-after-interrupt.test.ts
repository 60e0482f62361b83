/**
 * @module A scripted call introduced by a user interrupt (the benchmark's
 * user-interrupt workload, AsyncLM §6.6) is not emitted before that interrupt
 * is injected, in every calling mode; the session waits (traps) for it.
 */
import t from "tap";
import type { CallingMode } from "../../common/src/index.js";
import { eventsOf, startEngine, TOOLS } from "./engine-fixture.js";

const { engine } = await startEngine(t, { sequences: 2 });

for (const mode of ["async", "sync", "syncParallel"] as const satisfies readonly CallingMode[]) {
  t.test(`${mode}: the gated call waits for its user interrupt`, async (t) => {
    const s = engine.createSession({
      prompt: "first task, then whatever the user adds",
      tools: TOOLS,
      mode,
      policy: {
        type: "lpt-dag",
        calls: [
          { id: "first", tool: "echo", arguments: { text: "one" }, dependsOn: [] },
          { id: "later", tool: "echo", arguments: { text: "two" }, dependsOn: [], afterInterrupt: "user1" },
        ],
        finalText: " done",
      },
    });
    // Post the user interrupt once the first call's result is in.
    const posted = new Promise<number>((resolve) => {
      const off = s.subscribe((e) => {
        if (e.type === "interrupt" && e.id === "first") {
          off();
          setTimeout(() => {
            t.ok(engine.interrupt(s.id, { id: "user1", kind: "user", value: "also do two" }));
            resolve(performance.now());
          }, 30);
        }
      });
    });
    const done = await s.finished;
    t.equal(done.reason, "eos");
    const calls = eventsOf(s.events, "call");
    t.same(calls.map((c) => c.callId), ["first", "later"]);
    const userIntr = eventsOf(s.events, "interrupt").find((i) => i.id === "user1");
    t.ok(userIntr, "the user interrupt was injected");
    const laterCall = calls[1]!;
    t.ok(laterCall.t >= userIntr!.t, "the gated call comes after its interrupt");
    await posted;
  });
}

/** @module The fine-tuning commands refuse flags they do not read (a typo or `--help` would otherwise start a run with defaults, over the default output). */
import t from "tap";
import { parseArgv } from "../../common/src/index.js";
import { DATASET_FLAGS, refuseUnknownFlags } from "../../finetune/src/dataset-flags.js";

t.test("a known flag passes; an unknown one, --help included, is refused with the usage", async (t) => {
  t.doesNotThrow(() => refuseUnknownFlags(parseArgv(["--sync-share", "0.3", "--out", "x"]), ["out", ...DATASET_FLAGS], "usage"));
  t.throws(() => refuseUnknownFlags(parseArgv(["--help"]), ["out", ...DATASET_FLAGS], "npm run x"), /--help: not a flag of this command\nusage: npm run x/);
  t.throws(() => refuseUnknownFlags(parseArgv(["--sync-shares", "0.3"]), [...DATASET_FLAGS], "u"), /--sync-shares/);
});

/**
 * @module The engine pod's model check, run as an init container before the
 * engine starts (`node dist/engine-pod/src/check-model.js --model PATH
 * [--adapters PATH[@SCALE],...]`, the engine's own flags): reads the GGUF
 * headers of the model and its LoRA adapters and checks they fit together
 * (engine/model-check.ts). On failure it writes `Reason: message` to the
 * container's termination log, which the operator reads into the
 * EnginePool's status, and exits 1; the pod then waits in its init phase
 * instead of crash-looping an engine that cannot load.
 */
import { writeFileSync } from "node:fs";
import { defaultSource, formatModelCheckFailure, ModelCheckReason, optionalStringOpt } from "../../common/src/index.js";
import { parseAdapterList } from "./engine/engine-options.js";
import { checkModel, ModelCheckError } from "./engine/model-check.js";

const TERMINATION_LOG = "/dev/termination-log";

async function main(): Promise<number> {
  const src = defaultSource();
  const model = optionalStringOpt(src, "model");
  if (model === undefined || model === "") {
    console.error("usage: check-model --model PATH [--adapters PATH[@SCALE],...]");
    return 2;
  }
  const adapters = parseAdapterList(optionalStringOpt(src, "adapters") ?? "", "adapters");
  try {
    const check = await checkModel(model, adapters);
    console.log(JSON.stringify({ ok: true, model, ...check }));
    return 0;
  } catch (err) {
    const line = err instanceof ModelCheckError ? formatModelCheckFailure(err.reason, err.message) : formatModelCheckFailure(ModelCheckReason.ModelInvalid, (err as Error).message);
    console.error(line);
    const log = optionalStringOpt(src, "termination-log") ?? TERMINATION_LOG;
    try {
      writeFileSync(log, line);
    } catch {
      // Outside Kubernetes there is no termination log: stderr has it.
    }
    return 1;
  }
}

process.exitCode = await main();

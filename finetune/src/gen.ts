/**
 * @module `npm run gen-finetune -- --out FILE [--model GGUF]
 * [--questions FILE[,FILE..] [--answers FILE[,FILE..]]] [--split tuning|eval|all]
 * [--variants N] [--multi-call-variants N] [--fan-outs N] [--runs N] [--sync-share F] [--multistep N] [--seed N]
 * [--call-style json|python] [--instructions brief|full] [--max-tokens N] [--format cml|native]`: CML fine-tuning data
 * (AsyncLM §4.2) from BFCL tasks, as JSON Lines. Each line holds `messages`
 * (the role/content chat format LlamaFactory, TRL and most fine-tuning tools
 * read), `segments` (which spans the model wrote and which the engine
 * injected), the DAG, and, with a model, `tokens`: the sample in that model's
 * tokens with the spans the loss is taken on (`npm run finetune` trains on
 * these). Every sample is validated before it is written.
 *
 * By default only the tuning split of every BFCL category file is used, so
 * the accuracy benchmark's evaluation split stays unseen.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgv } from "../../common/src/index.js";
import { buildDataset, buildNativeDataset, serializeDataset } from "./dataset.js";
import { DATASET_FLAGS, DEFAULT_BASE_MODEL, describeStats, parseDatasetFlags, parseFormatFlag, refuseUnknownFlags } from "./dataset-flags.js";
import { SampleTokenizer } from "./sample-tokens.js";

async function main(): Promise<void> {
  const flags = parseArgv(process.argv.slice(2));
  const out = flags.get("out");
  if (out === undefined || out === "true") {
    console.error("usage: npm run gen-finetune -- --out FILE [--model GGUF] [--questions FILE[,FILE..]] [--split tuning|eval|all] [--variants N] [--multi-call-variants N] [--fan-outs N] [--runs N] [--sync-share F] [--multistep N] [--seed N] [--call-style json|python] [--instructions brief|full] [--max-tokens N]");
    process.exit(2);
  }
  refuseUnknownFlags(flags, ["out", "model", ...DATASET_FLAGS], "npm run gen-finetune -- --out FILE [--model GGUF] [dataset flags]");
  const options = parseDatasetFlags(flags);
  const format = parseFormatFlag(flags);
  const modelPath = flags.get("model") ?? DEFAULT_BASE_MODEL();
  const tokenizer = existsSync(modelPath) ? await SampleTokenizer.load(modelPath) : undefined;
  if (tokenizer === undefined) console.warn(`${modelPath} not found: time is counted in estimated tokens and no token ids are written`);
  if (format === "native" && tokenizer === undefined) throw new Error("--format native renders samples with the model's chat wrapper: --model must name a GGUF");
  try {
    const { samples, stats } = format === "native" ? buildNativeDataset(options, tokenizer!) : buildDataset(options, tokenizer);
    const { text, sha256 } = serializeDataset(samples);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, text);
    console.log(`wrote ${out} (sha256 ${sha256}): ${describeStats(stats)}; ${options.split} split; every sample passed the CML monitor replay`);
  } finally {
    await tokenizer?.close();
  }
}

await main();

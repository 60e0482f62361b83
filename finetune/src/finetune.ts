/**
 * @module `npm run finetune -- [--base GGUF] [--out DIR] [--device cpu|cuda]
 * [--epochs N] [--max-steps N] [--lr F] [--rank N] [--alpha F] [--accum N]
 * [--threads N] [--time-budget-s S] [--seed N] [--format cml|native]
 * [--resume-from DIR/adapter] [dataset flags of gen-finetune]`:
 * LoRA fine-tuning of a model on CML (AsyncLM §3.3), from the base GGUF the
 * engine serves to a GGUF LoRA adapter an EnginePool loads.
 * 1. installs the toolchain if needed (hack/tools/80-finetune.sh: PyTorch,
 *    transformers, peft, llama.cpp's converter, in the git-ignored cache);
 * 2. generates the samples from the tuning split, tokenized with the base
 *    model's vocabulary by the engine's own prompt code (`data.jsonl`);
 * 3. trains (finetune/interlace_finetune/train.py) with the loss on the
 *    model-written tokens only, and converts the adapter to GGUF with the
 *    metadata the engine reads (`interlace.prompt.examples: none`,
 *    `interlace.prompt.instructions: brief`: the model is prompted as it was
 *    trained, without few-shot examples and with the CML syntax in one line);
 * 4. writes `provenance.json` (base model and data hashes, seed,
 *    hyper-parameters, loss curve, versions) and `loss.svg`, and checks the
 *    adapter against the base model the way the engine will.
 * The same command trains a bigger model on a GPU: `--base PATH --device cuda
 * --micro-batch 8`. A GPU host without Node.js runs the steps apart:
 * `--stage prepare` writes the data and prints the one Python command to run
 * there (train.py needs only PyTorch, transformers, peft and gguf); with the
 * run's folder copied back, `--stage finish --out DIR` converts, checks and
 * records it here.
 * `--format native` trains on the same tasks in the model's own tool-call
 * format instead (the accuracy bench's comparison row; the engine serves CML).
 * `--stage soup --adapters A.gguf,B.gguf,... [--rank R] --out DIR` averages
 * finished adapters into one (a model soup: the uniform mean of their weight
 * deltas, finetune/interlace_finetune/soup.py; exact, or truncated to rank R
 * by SVD), to cut the seed noise of single fine-tunes without selecting any
 * of them on an eval score.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { basename, dirname, join, resolve } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { parseArgv } from "../../common/src/index.js";
import { checkModel } from "../../engine-pod/src/engine/model-check.js";
import { renderSvg } from "../../bench/lib/output.js";
import { buildDataset, buildNativeDataset, serializeDataset } from "./dataset.js";
import { DATASET_FLAGS, DEFAULT_BASE_MODEL, describeStats, parseDatasetFlags, parseFormatFlag, refuseUnknownFlags } from "./dataset-flags.js";
import { SampleTokenizer } from "./sample-tokens.js";
import { CACHE, FINETUNE_PACKAGE_DIR, FINETUNE_PYTHON, INSTALL_SCRIPT, LLAMA_CONVERTER } from "./toolchain.js";

/** Training flags passed through to train.py as they are. */
const TRAIN_FLAGS = ["device", "epochs", "max-steps", "lr", "rank", "alpha", "dropout", "targets", "accum", "micro-batch", "holdout", "threads", "dtype", "time-budget-s", "resume-from"];

/** `all`: data, training, conversion; `prepare`: the data only, and the training command for another machine; `finish`: conversion and checks of a run trained elsewhere; `soup`: the mean of finished adapters. */
type Stage = "all" | "prepare" | "finish" | "soup";
const STAGES: Stage[] = ["all", "prepare", "finish", "soup"];

function run(cmd: string, args: string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    // glibc's per-thread arenas fragment under a training loop's varying allocations; two are plenty.
    const child = spawn(cmd, args, { cwd, stdio: "inherit", env: { MALLOC_ARENA_MAX: "2", ...process.env, PYTHONUNBUFFERED: "1" } });
    child.on("error", fail);
    child.on("exit", (code) => (code === 0 ? done() : fail(new Error(`${basename(cmd)} ${args.slice(0, 3).join(" ")} … exited with ${code}`))));
  });
}

function lossChart(loss: { train: { step: number; loss: number }[]; held_out: { step: number; held_out_loss: number }[] }, title: string): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title,
    width: 480,
    height: 240,
    data: { values: [...loss.train.map((x) => ({ step: x.step, loss: x.loss, series: "training (per step)" })), ...loss.held_out.map((x) => ({ step: x.step, loss: x.held_out_loss, series: "held out" }))] },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "step", type: "quantitative", title: "optimizer step" },
      y: { field: "loss", type: "quantitative", title: "cross-entropy (model-written tokens)" },
      color: { field: "series", type: "nominal", title: null },
    },
  };
}

const USAGE =
  "npm run finetune -- [--stage all|prepare|finish|soup] [--adapters A.gguf,B.gguf,... (soup)] [--base GGUF] [--out DIR] [--force] [--device cpu|cuda] [--micro-batch N] [--epochs N] [--max-steps N] [--lr F] [--rank N] [--alpha F] [--accum N] [--threads N] [--time-budget-s S] [--seed N] [--format cml|native] [--resume-from DIR/adapter] [dataset flags of gen-finetune]";

async function main(): Promise<void> {
  const flags = parseArgv(process.argv.slice(2));
  refuseUnknownFlags(flags, ["stage", "base", "out", "force", "adapters", ...TRAIN_FLAGS, ...DATASET_FLAGS], USAGE);
  const stage = (flags.get("stage") ?? "all") as Stage;
  if (!STAGES.includes(stage)) throw new Error(`--stage must be all, prepare, finish or soup\nusage: ${USAGE}`);
  const base = resolve(flags.get("base") ?? DEFAULT_BASE_MODEL());
  if (!existsSync(base)) throw new Error(`base model not found: ${base} (run \`bash hack/tools/50-gemma.sh\` for Gemma 3 270M, or pass --base PATH)`);
  const format = parseFormatFlag(flags);
  const out = resolve(flags.get("out") ?? join(CACHE, "adapters", `${basename(base, ".gguf")}-${format}`));
  const seed = flags.get("seed") ?? "1";
  // A finished adapter is a measured artefact (its provenance names its data): never trained over by accident.
  if (existsSync(join(out, "adapter.gguf")) && flags.get("force") !== "true") throw new Error(`${out} already holds an adapter: pass another --out, or --force to ${stage === "finish" ? "convert" : "train"} over it`);
  mkdirSync(out, { recursive: true });
  const started = performance.now();
  const command = `npm run finetune -- ${process.argv.slice(2).join(" ")}`.trim();

  if (!existsSync(FINETUNE_PYTHON) || !existsSync(join(LLAMA_CONVERTER, "convert_lora_to_gguf.py"))) await run("bash", [INSTALL_SCRIPT], FINETUNE_PACKAGE_DIR);
  if (stage === "soup") return soupStage(flags, base, out, format);

  const data = join(out, "data.jsonl");
  const metadata = join(out, "metadata.json");
  const datasetFile = join(out, "dataset.json");
  if (stage !== "finish") {
    const options = parseDatasetFlags(flags);
    const tokenizer = await SampleTokenizer.load(base);
    try {
      const built = format === "native" ? buildNativeDataset(options, tokenizer) : buildDataset(options, tokenizer);
      const { text, sha256 } = serializeDataset(built.samples);
      writeFileSync(data, text);
      console.log(`data: ${data} (sha256 ${sha256}): ${describeStats(built.stats)}`);
      // The command that made the data; a run finished elsewhere records it beside the finishing one.
      writeFileSync(datasetFile, JSON.stringify({ ...(stage === "prepare" ? { prepared_by: command } : {}), ...options, sources: options.sources.map((s) => basename(s.questions)), stats: { ...built.stats, sources: built.stats.sources.length } }, null, 2));
    } finally {
      await tokenizer.close();
    }
    // A CML adapter tells the engine how to prompt its model; a native one is prompted by its chat wrapper's own format.
    const prompt = format === "cml" ? { "interlace.prompt.examples": "none", "interlace.prompt.instructions": options.instructions, "interlace.prompt.call_style": options.callStyle } : { "interlace.prompt.format": "native" };
    writeFileSync(metadata, JSON.stringify({ "general.name": `${basename(base, ".gguf")} ${format === "cml" ? "CML" : "native tool-call"} LoRA (Interlace)`, ...prompt }, null, 2));
  }
  const trainArgs = ["-m", "interlace_finetune.train", "--base", base, "--data", data, "--out", out, "--seed", seed];
  for (const f of TRAIN_FLAGS) if (flags.has(f)) trainArgs.push(`--${f}`, f === "resume-from" ? resolve(flags.get(f)!) : flags.get(f)!);
  if (stage === "prepare") {
    console.log(
      [
        `prepared ${out}. On the training machine (PyTorch, transformers, peft, gguf; no Node.js), from a copy of finetune/, with the base model and this folder copied to the same paths:`,
        `  python3 ${trainArgs.join(" ")}`,
        `then copy ${out}/{adapter,base-config,loss.json,provenance.json} back and run: npm run finetune -- --stage finish --out ${out}${flags.has("base") ? ` --base ${base}` : ""}${format === "native" ? " --format native" : ""}`,
      ].join("\n"),
    );
    return;
  }
  if (stage === "all") await run(FINETUNE_PYTHON, [...trainArgs, "--converter", LLAMA_CONVERTER, "--metadata", metadata], FINETUNE_PACKAGE_DIR);
  else {
    for (const needed of ["adapter", "base-config", "loss.json", "provenance.json", "metadata.json", "dataset.json"]) {
      if (!existsSync(join(out, needed))) throw new Error(`--stage finish: ${join(out, needed)} is missing (--stage prepare writes the data files; the training run writes the rest)`);
    }
    await run(FINETUNE_PYTHON, ["-m", "interlace_finetune.export", out, "--converter", LLAMA_CONVERTER, "--metadata", metadata], FINETUNE_PACKAGE_DIR);
  }

  const adapter = join(out, "adapter.gguf");
  const check = await checkModel(base, [{ path: adapter, scale: 1 }], format);
  const provenance = JSON.parse(readFileSync(join(out, "provenance.json"), "utf8")) as Record<string, unknown>;
  const dataset = JSON.parse(readFileSync(datasetFile, "utf8")) as Record<string, unknown>;
  writeFileSync(join(out, "provenance.json"), JSON.stringify({ ...provenance, dataset, command }, null, 2));
  const loss = JSON.parse(readFileSync(join(out, "loss.json"), "utf8")) as Parameters<typeof lossChart>[0];
  writeFileSync(join(out, "loss.svg"), await renderSvg(lossChart(loss, `LoRA fine-tuning on ${format === "cml" ? "CML" : "the native tool-call format"}: ${basename(base)}`)));
  const size = readFileSync(adapter).length;
  console.log(`adapter ${adapter} (${(size / 1_048_576).toFixed(1)} MiB, rank ${check.adapters[0]?.rank}, checked against ${basename(base)}); provenance.json and loss.svg beside it; ${Math.round((performance.now() - started) / 1000)} s in all`);
}

/** Reads `--adapters`: at least two finished adapters, each a file. */
function soupInputs(flags: Map<string, string>): string[] {
  const inputs = (flags.get("adapters") ?? "").split(",").filter((p) => p !== "").map((p) => resolve(p));
  if (inputs.length < 2) throw new Error(`--stage soup needs --adapters A.gguf,B.gguf[,...]: at least two adapters to average\nusage: ${USAGE}`);
  for (const input of inputs) if (!existsSync(input)) throw new Error(`--adapters: ${input}: no such file`);
  return inputs;
}

/** What each input's own provenance (beside its adapter, when there) says of how it was trained. */
function inputProvenance(adapter: string): Record<string, unknown> | null {
  const file = join(dirname(adapter), "provenance.json");
  if (!existsSync(file)) return null;
  const p = JSON.parse(readFileSync(file, "utf8")) as { seed?: unknown; data?: { sha256?: unknown; samples?: unknown }; hyperparameters?: { rank?: unknown; alpha?: unknown; steps?: unknown; epochs?: unknown }; command?: unknown };
  return { seed: p.seed, data: { sha256: p.data?.sha256, samples: p.data?.samples }, rank: p.hyperparameters?.rank, alpha: p.hyperparameters?.alpha, steps: p.hyperparameters?.steps, epochs: p.hyperparameters?.epochs, command: p.command };
}

async function soupStage(flags: Map<string, string>, base: string, out: string, format: "cml" | "native"): Promise<void> {
  const inputs = soupInputs(flags);
  const rank = flags.get("rank");
  if (rank !== undefined && !/^[1-9][0-9]*$/.test(rank)) throw new Error(`--rank must be a positive integer, got ${rank}`);
  // Every input must be one the engine accepts on this base before they are mixed.
  await checkModel(base, inputs.map((path) => ({ path, scale: 1 })), format);
  const adapter = join(out, "adapter.gguf");
  const args = ["-m", "interlace_finetune.soup", "--out", adapter, ...(rank !== undefined ? ["--rank", rank] : []), ...inputs];
  const stdout = await new Promise<string>((done, fail) => {
    const child = spawn(FINETUNE_PYTHON, args, { cwd: FINETUNE_PACKAGE_DIR, stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
    child.on("error", fail);
    child.on("exit", (code) => (code === 0 ? done(text) : fail(new Error(`interlace_finetune.soup exited with ${code}`))));
  });
  const soup = JSON.parse(stdout.trim().split("\n").at(-1)!) as { inputs: { path: string }[]; rank: number; energy_kept: { min: number; mean: number }; adapter: { bytes: number } };
  const check = await checkModel(base, [{ path: adapter, scale: 1 }], format);
  const command = `npm run finetune -- ${process.argv.slice(2).join(" ")}`.trim();
  const baseHash = createHash("sha256").update(readFileSync(base)).digest("hex");
  const provenance = { base: { path: base, sha256: baseHash }, ...soup, inputs: soup.inputs.map((i) => ({ ...i, provenance: inputProvenance(i.path) })), command };
  writeFileSync(join(out, "provenance.json"), JSON.stringify(provenance, null, 2));
  console.log(`soup ${adapter} of ${inputs.length} adapters (${(soup.adapter.bytes / 1_048_576).toFixed(1)} MiB, rank ${check.adapters[0]?.rank}, ${Math.round(soup.energy_kept.mean * 100)}% of the mean delta's energy kept on average, ${Math.round(soup.energy_kept.min * 100)}% at worst; checked against ${basename(base)}); provenance.json beside it`);
}

await main();

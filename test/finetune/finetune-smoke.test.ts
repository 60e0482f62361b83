/**
 * @module The fine-tuning path end to end, on a model small enough for a
 * test: a tiny Gemma-3-architecture model is built from a config (random
 * weights, a SentencePiece vocabulary trained on the spot; nothing is
 * downloaded) and written as GGUF by llama.cpp's converter; CML samples are
 * tokenized for it by the engine's own prompt code; LoRA training runs a few
 * dozen steps (train.py), the adapter is converted to GGUF with its metadata
 * and provenance, the engine's model check accepts it, and loaded into the
 * engine it changes the greedy output, towards what it was trained on. Skips,
 * saying why, when the fine-tuning toolchain (hack/tools/80-finetune.sh) is
 * not installed.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { createLogger, type ToolSpec } from "../../common/src/index.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import { checkModel } from "../../engine-pod/src/engine/model-check.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { buildSample, type TrainingTask } from "../../finetune/src/build-samples.js";
import { FINETUNE_PYTHON, LLAMA_CONVERTER, FINETUNE_PACKAGE_DIR } from "../../finetune/src/toolchain.js";
import { SampleTokenizer } from "../../finetune/src/sample-tokens.js";

const run = promisify(execFile);
const skip = existsSync(FINETUNE_PYTHON) && existsSync(join(LLAMA_CONVERTER, "convert_lora_to_gguf.py")) ? false : `the fine-tuning toolchain is not installed (bash hack/tools/80-finetune.sh)`;

const tools: ToolSpec[] = [
  { name: "get_weather", description: "Current weather of a city.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
];
const task: TrainingTask = {
  id: "w",
  origin: "hand",
  sources: ["hand"],
  messages: [{ role: "user", content: "What is the weather in Boston?" }],
  tools,
  calls: [{ id: "c0", tool: "get_weather", arguments: { city: "Boston" }, dependsOn: [] }],
};

t.test("a tiny Gemma-3 model: samples → LoRA training → GGUF adapter → the engine's output changes", { skip, timeout: 900_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-finetune-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const python = (args: string[]) => run(FINETUNE_PYTHON, args, { cwd: FINETUNE_PACKAGE_DIR, maxBuffer: 64 << 20, env: { ...process.env, PYTHONUNBUFFERED: "1" } });

  await python(["-m", "interlace_finetune.tiny", "--out", dir, "--converter", LLAMA_CONVERTER]);
  const tiny = join(dir, "tiny-gemma3.gguf");
  t.ok(existsSync(tiny), "the tiny model was written as GGUF");

  // The same request, simulated a few times (results and timing differ); tokenized for the tiny model.
  const tokenizer = await SampleTokenizer.load(tiny);
  const rng = mulberry32(3);
  const lines: string[] = [];
  for (let i = 0; i < 6; i++) {
    const sample = buildSample(task, { rng, countTokens: tokenizer.countTokens, shape: "sync" });
    lines.push(JSON.stringify({ ...sample, tokens: tokenizer.tokenize(sample) }));
  }
  await tokenizer.close();
  const data = join(dir, "data.jsonl");
  writeFileSync(data, lines.join("\n") + "\n");
  const metadata = join(dir, "metadata.json");
  writeFileSync(metadata, JSON.stringify({ "interlace.prompt.examples": "none", "interlace.prompt.instructions": "brief" }));
  const out = join(dir, "run");
  await python(["-m", "interlace_finetune.train", "--base", tiny, "--data", data, "--out", out, "--max-steps", "200", "--accum", "1", "--lr", "2e-2", "--rank", "8", "--alpha", "16", "--dropout", "0", "--holdout", "0", "--dtype", "fp32", "--threads", "1", "--converter", LLAMA_CONVERTER, "--metadata", metadata]);

  const adapter = join(out, "adapter.gguf");
  const provenance = JSON.parse(readFileSync(join(out, "provenance.json"), "utf8")) as { base: { sha256: string }; data: { sha256: string }; seed: number; hyperparameters: { rank: number; steps: number }; loss: { first: number; last: number } };
  t.match(provenance, { seed: 1, hyperparameters: { rank: 8, steps: 200 } });
  t.match(provenance.base.sha256, /^[0-9a-f]{64}$/, "the base model's hash");
  t.match(provenance.data.sha256, /^[0-9a-f]{64}$/, "the data's hash");
  t.ok(provenance.loss.last < provenance.loss.first, `the training loss fell (${provenance.loss.first} → ${provenance.loss.last})`);
  const check = await checkModel(tiny, [{ path: adapter, scale: 1 }]);
  t.match(check.adapters[0], { architecture: "gemma3", rank: 8, promptExamples: "none", promptInstructions: "brief" }, "the engine's check accepts the adapter and reads its metadata");

  // Samples batched into one forward pass (padded to the longest) give the loss they give one at a time.
  const { stdout: losses } = await python([
    "-c",
    [
      "import json, sys, torch",
      "from pathlib import Path",
      "from peft import PeftModel",
      "from interlace_finetune.base_model import load_base",
      "from interlace_finetune.data import read_samples",
      "from interlace_finetune.train import LossModel",
      `base = load_base(Path(${JSON.stringify(tiny)}), "cpu", torch.float32)`,
      `model = PeftModel.from_pretrained(base, ${JSON.stringify(join(out, "adapter"))}).eval()`,
      `samples, _ = read_samples(Path(${JSON.stringify(data)}), base.get_input_embeddings().weight.shape[0])`,
      "lm = LossModel(model, 'cpu')",
      "with torch.no_grad(): print(json.dumps([sum(lm.loss([s]).item() for s in samples) / len(samples), lm.loss(samples).item()]))",
    ].join("\n"),
  ]);
  const [oneByOne, batched] = JSON.parse(losses.trim().split("\n").at(-1)!) as [number, number];
  t.ok(Math.abs(oneByOne - batched) < 1e-4 * Math.max(1, oneByOne), `a padded batch has the samples' mean loss (${batched} against ${oneByOne} one at a time)`);
  t.not(new Set(lines.map((l) => (JSON.parse(l) as { tokens: { input_ids: number[] } }).tokens.input_ids.length)).size, 1, "the samples differ in length, so the batch is padded");

  // Going on from that adapter: its LoRA shape is kept, the training starts where it ended, and the provenance says so.
  // Trained in batches of two and without the converter (as on a GPU host), then converted on its own.
  const again = join(dir, "again");
  await python(["-m", "interlace_finetune.train", "--base", tiny, "--data", data, "--out", again, "--max-steps", "5", "--accum", "2", "--micro-batch", "2", "--lr", "1e-3", "--rank", "4", "--holdout", "0", "--dtype", "fp32", "--threads", "1", "--resume-from", join(out, "adapter")]);
  t.notOk(existsSync(join(again, "adapter.gguf")), "without --converter no GGUF is written");
  await python(["-m", "interlace_finetune.export", again, "--converter", LLAMA_CONVERTER, "--metadata", metadata]);
  t.match((await checkModel(tiny, [{ path: join(again, "adapter.gguf"), scale: 1 }])).adapters[0], { rank: 8, promptExamples: "none" }, "the adapter converted apart is one the engine accepts");
  t.match(JSON.parse(readFileSync(join(again, "provenance.json"), "utf8")), { hyperparameters: { micro_batch: 2 }, adapter: { bytes: Number } }, "its provenance records the batching and the converted file");
  const resumed = JSON.parse(readFileSync(join(again, "provenance.json"), "utf8")) as { hyperparameters: { rank: number }; loss: { first: number }; resumed_from?: { sha256: string; provenance: { data: { sha256: string } } } };
  t.equal(resumed.hyperparameters.rank, 8, "the resumed adapter keeps its rank");
  t.ok(resumed.loss.first < provenance.loss.first / 2, `training goes on from the trained weights (first loss ${resumed.loss.first} against ${provenance.loss.first} from scratch)`);
  t.match(resumed.resumed_from, { sha256: /^[0-9a-f]{64}$/, provenance: { data: { sha256: provenance.data.sha256 } } }, "the provenance names the adapter it went on from, and that run's provenance");

  const greedy = async (withAdapter: boolean): Promise<string> => {
    const engine = await createEngine(
      { modelPath: tiny, ...(withAdapter ? { adapters: [{ path: adapter, scale: 1 }] } : { promptExamples: "none", promptInstructions: "brief" }), gpu: false, sequences: 1, contextSize: 2048, threads: 1, kvPolicy: "keep", maxTokens: 24, prefixCache: false },
      new InProcessExecutor(),
      createLogger("finetune-smoke", "warn"),
      { calibrate: false },
    );
    try {
      const result = await engine.complete({ messages: task.messages, tools, maxTokens: 24, temperature: 0, seed: 1, stopAtCalls: "never" });
      return result.raw;
    } finally {
      await engine.close();
    }
  };
  const before = await greedy(false);
  const after = await greedy(true);
  t.not(after, before, `the adapter changes the greedy output (${JSON.stringify(before.slice(0, 40))} → ${JSON.stringify(after.slice(0, 40))})`);
  t.match(after, /^\[CALL\]/, "with the adapter the model opens a call block, as trained");
});

/**
 * @module The model soup of LoRA adapters (finetune/interlace_finetune/soup.py):
 * on tiny GGUF adapters of different ranks and alphas, written here with the
 * `gguf` package, the exact soup's delta B·A·alpha/r per weight equals the
 * mean of the inputs' deltas, and a rank-R soup is the best rank-R
 * approximation of that mean (its error is the SVD's tail, no more).
 * Adapters that adapt different weights are refused. Skips, saying why, when
 * the fine-tuning toolchain (hack/tools/80-finetune.sh) is not installed.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { FINETUNE_PACKAGE_DIR, FINETUNE_PYTHON } from "../../finetune/src/toolchain.js";

const run = promisify(execFile);
const skip = existsSync(FINETUNE_PYTHON) ? false : "the fine-tuning toolchain is not installed (bash hack/tools/80-finetune.sh)";

/** Python that writes a random GGUF LoRA adapter: `write(path, rank, alpha, seed, weights)`, and reads any adapter's deltas back: `deltas(path)`. */
const HELPERS = `
import json, sys
import numpy as np
import gguf

SHAPES = {"blk.0.attn_q.weight": (24, 16), "blk.0.ffn_down.weight": (16, 40)}

def write(path, rank, alpha, seed, names=SHAPES):
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, arch="gemma3")
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    w.add_string("interlace.prompt.examples", "none")
    for name in names:
        out, inp = SHAPES[name]
        w.add_tensor(name + ".lora_a", rng.normal(0, 0.5, (rank, inp)).astype(np.float16), raw_dtype=gguf.GGMLQuantizationType.F16)
        w.add_tensor(name + ".lora_b", rng.normal(0, 0.5, (out, rank)).astype(np.float16), raw_dtype=gguf.GGMLQuantizationType.F16)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

def deltas(path):
    r = gguf.GGUFReader(path)
    alpha = float(r.get_field(gguf.Keys.Adapter.LORA_ALPHA).contents())
    t = {x.name: np.asarray(x.data, dtype=np.float64) for x in r.tensors}
    return {n[:-7]: t[n[:-7] + ".lora_b"] @ a * alpha / a.shape[0] for n, a in t.items() if n.endswith(".lora_a")}
`;

t.test("a soup of LoRA adapters is the mean of their deltas, exact or as its best rank-R approximation", { skip, timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-soup-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const python = async (code: string): Promise<string> => (await run(FINETUNE_PYTHON, ["-c", HELPERS + code], { cwd: FINETUNE_PACKAGE_DIR, maxBuffer: 16 << 20 })).stdout;
  const soup = (args: string[]) => run(FINETUNE_PYTHON, ["-m", "interlace_finetune.soup", ...args], { cwd: FINETUNE_PACKAGE_DIR, maxBuffer: 16 << 20 });
  const inputs = [join(dir, "a.gguf"), join(dir, "b.gguf"), join(dir, "c.gguf")];
  // Different ranks and alphas: the mean is of B·A·alpha/r, not of the raw factors.
  await python(`write(${JSON.stringify(inputs[0])}, 4, 8, 1); write(${JSON.stringify(inputs[1])}, 4, 4, 2); write(${JSON.stringify(inputs[2])}, 2, 16, 3)`);

  const exact = join(dir, "exact.gguf");
  const printed = JSON.parse((await soup(["--out", exact, ...inputs])).stdout.trim()) as { rank: number; exact: boolean; inputs: { sha256: string }[]; adapter: { bytes: number } };
  t.match(printed, { rank: 10, exact: true, adapter: { bytes: Number } }, "the exact soup has the inputs' ranks summed");
  t.equal(printed.inputs.length, 3, "its provenance names every input");

  const truncated = join(dir, "r3.gguf");
  await soup(["--out", truncated, "--rank", "3", ...inputs]);
  const report = JSON.parse(
    await python(`
ins = [deltas(p) for p in ${JSON.stringify(inputs)}]
ex, tr = deltas(${JSON.stringify(exact)}), deltas(${JSON.stringify(truncated)})
out = {}
for name in SHAPES:
    mean = sum(d[name] for d in ins) / len(ins)
    s = np.linalg.svd(mean, compute_uv=False)
    out[name] = {
        "exact_err": float(np.abs(ex[name] - mean).max() / np.abs(mean).max()),
        "rank3_err": float(np.linalg.norm(tr[name] - mean)),
        "svd_tail": float(np.sqrt((s[3:] ** 2).sum())),
        "norm": float(np.linalg.norm(mean)),
        "rank3": int(np.linalg.matrix_rank(tr[name], tol=1e-3 * s[0])),
    }
print(json.dumps(out))
`),
  ) as Record<string, { exact_err: number; rank3_err: number; svd_tail: number; norm: number; rank3: number }>;
  for (const [name, r] of Object.entries(report)) {
    t.ok(r.exact_err < 2e-3, `${name}: the exact soup's delta is the mean of the inputs' deltas (max relative error ${r.exact_err.toExponential(2)}, F16 rounding)`);
    t.equal(r.rank3, 3, `${name}: the rank-3 soup's delta has rank 3`);
    t.ok(r.rank3_err <= r.svd_tail * 1.01 + 1e-3 * r.norm, `${name}: its error (${r.rank3_err.toFixed(4)}) is the SVD tail of the mean (${r.svd_tail.toFixed(4)}): the best rank-3 approximation`);
    t.ok(r.svd_tail > 1e-2 * r.norm, `${name}: the mean has rank above 3, so the truncation is tested (tail ${r.svd_tail.toFixed(3)} of ${r.norm.toFixed(3)})`);
  }

  // An adapter of other weights cannot be averaged in.
  const other = join(dir, "other.gguf");
  await python(`write(${JSON.stringify(other)}, 4, 8, 4, names=["blk.0.attn_q.weight"])`);
  const refused = await soup(["--out", join(dir, "bad.gguf"), inputs[0]!, other]).then(
    () => "",
    (e: { stderr: string }) => e.stderr,
  );
  t.match(refused, /adapt different weights/, "adapters of different targets are refused, saying why");
});

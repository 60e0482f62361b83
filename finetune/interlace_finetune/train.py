"""LoRA supervised fine-tuning on CML samples (AsyncLM §3.3), loss on the
tokens the model writes only.

    python -m interlace_finetune.train --base BASE.gguf --data samples.jsonl --out DIR
        [--device cpu|cuda] [--epochs N] [--max-steps N] [--lr 2e-4] [--rank 16]
        [--alpha 32] [--dropout 0.05] [--targets q_proj,...] [--accum 8]
        [--holdout 0.05] [--seed 1] [--threads N] [--dtype bf16|fp32]
        [--time-budget-s S] [--converter DIR] [--resume-from ADAPTER_DIR]
        [--micro-batch N]

Writes into DIR: `adapter/` (peft), `adapter.gguf` (llama.cpp's LoRA format,
with the provenance in its metadata), `base-config/`, `loss.json` and
`provenance.json`. Logits are computed only where the loss is taken: with
Gemma's 262k-token vocabulary the LM head over every position would cost as
much as the rest of the model.

On a GPU, `--micro-batch 8` runs that many samples in one forward pass
(padded to the longest): the same loss as one at a time, a fraction of the
kernel launches. Without `--converter` no GGUF is written: a machine without
llama.cpp's converter (a GPU host) trains, and `python -m
interlace_finetune.export DIR` converts the adapter where the converter is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from .base_model import base_identity, load_base, save_base_config
from .data import Sample, read_samples

DEFAULT_TARGETS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", type=Path, required=True, help="base model: a GGUF file (dequantised) or a Hugging Face model folder")
    p.add_argument("--data", type=Path, required=True, help="JSON Lines from `npm run gen-finetune -- --model BASE`")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cpu", help="cpu or cuda (or cuda:N)")
    p.add_argument("--epochs", type=float, help="passes over the training samples (default 2, or as many as --max-steps takes)")
    p.add_argument("--max-steps", type=int, default=0, help="optimizer steps at most (0: as many as the epochs take)")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=float, default=32.0)
    p.add_argument("--dropout", type=float, default=0.05)
    p.add_argument("--targets", default=DEFAULT_TARGETS, help="comma-separated module names LoRA adapts")
    p.add_argument("--accum", type=int, default=8, help="samples per optimizer step")
    p.add_argument("--micro-batch", type=int, default=1, help="samples per forward pass (a divisor of --accum; more than 1 pays on a GPU)")
    p.add_argument("--holdout", type=float, default=0.05, help="share of samples kept out of training to measure held-out loss")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16", help="the frozen base weights' type (LoRA weights stay fp32)")
    p.add_argument("--time-budget-s", type=float, default=0, help="stop after this many seconds of training (0: no limit)")
    p.add_argument("--converter", type=Path, help="llama.cpp's convert_lora_to_gguf.py folder (with gguf-py); omitted: no GGUF adapter")
    p.add_argument("--resume-from", type=Path, help="a peft adapter folder (DIR/adapter of an earlier run) to go on training; its rank, alpha and targets are kept")
    p.add_argument("--metadata", type=Path, help="JSON object of extra GGUF metadata (string values) for the adapter")
    return p.parse_args(argv)


def lr_at(step: int, total: int, peak: float) -> float:
    """Linear warm-up over the first 5% of steps, then cosine down to 10% of the peak."""
    warm = max(1, int(total * 0.05))
    if step < warm:
        return peak * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


PAD_TO = 64


class LossModel:
    """The decoder's hidden states, and logits only at the positions the loss reads.

    Each sample is right-padded to a multiple of PAD_TO tokens: with causal
    attention no real position sees the padding, and the kernels (oneDNN
    primitives on a CPU) meet a few dozen shapes instead of one per sample
    length, which they would otherwise cache without end."""

    def __init__(self, peft_model: torch.nn.Module, device: str) -> None:
        self.model = peft_model
        base = peft_model.get_base_model()
        self.decoder = base.get_decoder()
        self.head = base.get_output_embeddings()
        self.cap = getattr(base.config, "final_logit_softcapping", None)
        self.device = device

    def loss(self, batch: list[Sample]) -> torch.Tensor:
        """The mean over `batch` of each sample's mean token loss. Samples are
        right-padded to the longest: causal attention keeps the padding out of
        every real position, so batching changes nothing but speed."""
        longest = max(len(s.input_ids) for s in batch)
        width = longest + (-longest % PAD_TO)
        ids = torch.tensor([s.input_ids + [0] * (width - len(s.input_ids)) for s in batch], device=self.device)
        hidden = self.decoder(input_ids=ids, use_cache=False).last_hidden_state
        rows = torch.tensor([b for b, s in enumerate(batch) for _ in s.positions], device=self.device)
        cols = torch.tensor([p for s in batch for p in s.positions], device=self.device)
        logits = self.head(hidden[rows, cols]).float()
        if self.cap:
            logits = torch.tanh(logits / self.cap) * self.cap
        per_token = F.cross_entropy(logits, ids[rows, cols + 1], reduction="none")
        sums = torch.zeros(len(batch), device=self.device).index_add(0, rows, per_token)
        counts = torch.tensor([len(s.positions) for s in batch], device=self.device, dtype=sums.dtype)
        return (sums / counts).mean()


def chunks(items: list[Sample], size: int) -> list[list[Sample]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from peft import LoraConfig, PeftModel, get_peft_model  # imported late: --help stays fast

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.micro_batch < 1 or args.accum % args.micro_batch != 0:
        raise SystemExit(f"--micro-batch must divide --accum ({args.accum})")
    args.out.mkdir(parents=True, exist_ok=True)
    device = args.device
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32

    t0 = time.time()
    base = load_base(args.base, device, dtype)
    load_s = time.time() - t0
    vocab = base.get_input_embeddings().weight.shape[0]
    samples, data_sha = read_samples(args.data, vocab)
    save_base_config(base, args.out / "base-config")
    resumed = None
    if args.resume_from is not None:
        # Going on from an earlier run's adapter: its LoRA shape is kept, the optimizer starts afresh.
        model = PeftModel.from_pretrained(base, str(args.resume_from), is_trainable=True)
        lora = model.peft_config["default"]
        args.rank, args.alpha, args.dropout = lora.r, lora.lora_alpha, lora.lora_dropout
        weights = args.resume_from / "adapter_model.safetensors"
        previous = args.resume_from.parent / "provenance.json"
        resumed = {
            "adapter": str(args.resume_from),
            "sha256": hashlib.sha256(weights.read_bytes()).hexdigest() if weights.exists() else None,
            "provenance": json.loads(previous.read_text()) if previous.exists() else None,
        }
    else:
        lora = LoraConfig(
            r=args.rank,
            lora_alpha=args.alpha,
            lora_dropout=args.dropout,
            target_modules=[t for t in args.targets.split(",") if t],
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(base, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total_params = sum(p.numel() for p in model.parameters())
    print(f"base {args.base} loaded in {load_s:.0f} s ({total_params / 1e6:.0f} M parameters, {trainable / 1e6:.2f} M trainable); {len(samples)} samples", flush=True)

    rng = random.Random(args.seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    n_hold = int(len(samples) * args.holdout)
    held = [samples[i] for i in order[:n_hold]]
    train = [samples[i] for i in order[n_hold:]]
    steps_per_epoch = math.ceil(len(train) / args.accum)
    if args.epochs is None and args.max_steps > 0:
        total_steps = args.max_steps
    else:
        total_steps = math.ceil(steps_per_epoch * (args.epochs if args.epochs is not None else 2.0))
        if args.max_steps > 0:
            total_steps = min(total_steps, args.max_steps)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    lm = LossModel(model, device)

    def held_out_loss() -> float | None:
        if not held:
            return None
        model.eval()
        with torch.no_grad():
            total = sum(lm.loss(batch).item() * len(batch) for batch in chunks(held, args.micro_batch))
        model.train()
        return total / len(held)

    curve: list[dict[str, float]] = []
    evals: list[dict[str, float]] = []
    first_eval = held_out_loss()
    if first_eval is not None:
        evals.append({"step": 0, "held_out_loss": round(first_eval, 4)})
        print(f"held-out loss before training {first_eval:.3f}", flush=True)
    model.train()
    started = time.time()
    step = 0
    cursor = 0
    stopped_by = "steps"
    epoch_order = list(range(len(train)))
    while step < total_steps:
        if args.time_budget_s > 0 and time.time() - started > args.time_budget_s:
            stopped_by = "time budget"
            break
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, total_steps, args.lr)
        optimizer.zero_grad(set_to_none=True)
        losses = []
        picked = []
        for _ in range(args.accum):
            if cursor % len(train) == 0:
                rng.shuffle(epoch_order)
            picked.append(train[epoch_order[cursor % len(train)]])
            cursor += 1
        for batch in chunks(picked, args.micro_batch):
            loss = lm.loss(batch) * len(batch) / args.accum
            loss.backward()
            losses.append(loss.item() * args.accum / len(batch))
        tokens = sum(len(sample.input_ids) for sample in picked)
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        step += 1
        elapsed = time.time() - started
        mean = sum(losses) / len(losses)
        curve.append({"step": step, "epoch": round(cursor / len(train), 3), "loss": round(mean, 4), "lr": lr_at(step - 1, total_steps, args.lr), "tokens": tokens, "elapsed_s": round(elapsed, 1)})
        if step % 10 == 0 or step == total_steps:
            print(f"step {step}/{total_steps} epoch {cursor / len(train):.2f} loss {mean:.3f} {elapsed:.0f} s ({elapsed / step:.1f} s/step)", flush=True)
        if steps_per_epoch > 0 and step % steps_per_epoch == 0 and step < total_steps:
            value = held_out_loss()
            if value is not None:
                evals.append({"step": step, "held_out_loss": round(value, 4)})
                print(f"held-out loss {value:.3f}", flush=True)
    train_s = time.time() - started
    final_eval = held_out_loss()
    if final_eval is not None:
        evals.append({"step": step, "held_out_loss": round(final_eval, 4)})
        print(f"held-out loss after training {final_eval:.3f}", flush=True)

    model.save_pretrained(str(args.out / "adapter"))
    (args.out / "loss.json").write_text(json.dumps({"train": curve, "held_out": evals}, indent=1))
    import peft
    import transformers

    provenance = {
        "base": {"path": str(args.base), "sha256": base_identity(args.base), "architecture": type(base).__name__},
        "data": {"path": str(args.data), "sha256": data_sha, "samples": len(samples), "train_samples": len(train), "held_out_samples": len(held)},
        "seed": args.seed,
        "hyperparameters": {
            "method": "LoRA",
            "rank": args.rank,
            "alpha": args.alpha,
            "dropout": args.dropout,
            "targets": lora.target_modules if isinstance(lora.target_modules, list) else sorted(lora.target_modules),
            "lr": args.lr,
            "schedule": "linear warm-up 5%, cosine to 10%",
            "optimizer": "AdamW (weight decay 0), gradient clip 1.0",
            "samples_per_step": args.accum,
            "micro_batch": args.micro_batch,
            "epochs": round(cursor / len(train), 3),
            "steps": step,
            "base_dtype": args.dtype,
            "loss": "cross-entropy on the model-written tokens only (calls, traps, text, end of turn)",
        },
        **({"resumed_from": resumed} if resumed is not None else {}),
        "trainable_parameters": trainable,
        "training": {"device": device, **({"accelerator": torch.cuda.get_device_name(device)} if device.startswith("cuda") else {}), "threads": torch.get_num_threads(), "seconds": round(train_s, 1), "load_seconds": round(load_s, 1), "stopped_by": stopped_by},
        "loss": {"first": curve[0]["loss"] if curve else None, "last": curve[-1]["loss"] if curve else None, "held_out": evals},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2))
    if args.converter is not None:
        from .export import export_run

        provenance = export_run(args.out, args.converter, args.metadata)
    print(json.dumps({"steps": step, "seconds": round(train_s, 1), "loss_first": provenance["loss"]["first"], "loss_last": provenance["loss"]["last"], "held_out": evals[-1] if evals else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

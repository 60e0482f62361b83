"""A tiny Gemma-3-architecture model built from a config, with random weights
and a small SentencePiece vocabulary trained here, written as a Hugging Face
folder and as a GGUF file through llama.cpp's converter. Nothing is
downloaded: the training smoke test fine-tunes it, converts the adapter and
loads both into the engine.

    python -m interlace_finetune.tiny --out DIR --converter CONVERTER_DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

# Gemma's chat template (system text folded into the first user turn), so the
# engine renders prompts for the tiny model as it does for Gemma 3.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}"
    "{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' + (first if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)

CORPUS = [
    "You can call tools while you keep writing. Tools run in the background; their results are delivered to you later.",
    '[CALL]area1[HEAD]{"name":"calculate_area","arguments":{"base":10,"height":5}}[END][TRAP][END][INTR]area1[HEAD]{"area": 25}[END]The area is 25.',
    '[CALL]weather1[HEAD]{"name":"get_weather","arguments":{"city":"Boston"}}[END][INTR]weather1[HEAD]{"conditions": "sunny"}[END]It is sunny in Boston.',
    "Available tools: parameters type object properties required string number integer boolean array description estimated latency",
    "What is the weather in Paris and in Tokyo? Find the area of a triangle with base 10 and height 5. Done. All done.",
    "0 1 2 3 4 5 6 7 8 9 10 25 100 . , : ; ' \" { } [ ] ( ) _ - ~ ms s",
]


def train_tokenizer(folder: Path, vocab_size: int) -> Path:
    import sentencepiece as spm

    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS * 20) + "\n")
    prefix = folder / "tokenizer"
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(prefix),
        vocab_size=vocab_size,
        model_type="bpe",
        byte_fallback=True,
        character_coverage=1.0,
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        user_defined_symbols=["<start_of_turn>", "<end_of_turn>"],
        add_dummy_prefix=False,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        minloglevel=2,
    )
    corpus.unlink()
    (folder / "tokenizer.vocab").unlink(missing_ok=True)
    return prefix.with_suffix(".model")


def build(out: Path, converter: Path, vocab_size: int, seed: int) -> Path:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    hf = out / "hf"
    hf.mkdir(parents=True, exist_ok=True)
    train_tokenizer(hf, vocab_size)
    torch.manual_seed(seed)
    config = Gemma3TextConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=4096,
        sliding_window=512,
        # Wider than the 0.02 default: the tied embeddings then give logits with a real spread, so
        # greedy decoding has winners a few LoRA steps can change.
        initializer_range=0.3,
        pad_token_id=0,
        eos_token_id=[1, 106 if vocab_size > 106 else 1],
        bos_token_id=2,
    )
    model = Gemma3ForCausalLM(config)
    model.config.architectures = ["Gemma3ForCausalLM"]
    model.save_pretrained(str(hf))
    end_of_turn = 5  # <end_of_turn>: unk(3) is followed by the user-defined symbols, in order
    cfg = json.loads((hf / "config.json").read_text())
    cfg["eos_token_id"] = [1, end_of_turn]
    (hf / "config.json").write_text(json.dumps(cfg, indent=2))
    (hf / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False, "chat_template": CHAT_TEMPLATE}, indent=2)
    )
    gguf_path = out / "tiny-gemma3.gguf"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(converter / "gguf-py"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(converter / "convert_hf_to_gguf.py"), str(hf), "--outtype", "f32", "--outfile", str(gguf_path)], check=True, env=env)
    return gguf_path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--converter", type=Path, required=True, help="llama.cpp's converter folder (convert_hf_to_gguf.py and gguf-py)")
    p.add_argument("--vocab-size", type=int, default=400)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    print(build(args.out, args.converter, args.vocab_size, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())

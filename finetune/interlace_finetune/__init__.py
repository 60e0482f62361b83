"""LoRA fine-tuning for Interlace: CML samples (token ids + loss spans) -> a GGUF LoRA adapter with its provenance."""

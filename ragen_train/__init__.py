"""ragen-train: a compact StarPO-S trainer (multi-turn PPO/GRPO) for LLM agents on the ragen games."""

__version__ = "0.1.0"

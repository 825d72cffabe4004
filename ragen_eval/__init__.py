"""ragen-eval: play the ragen games with any LLM and score success, reasoning and consistency."""

__version__ = "0.1.0"

"""shardshift: read, check and translate distributed LLM training configurations."""

__version__ = "0.1.0"

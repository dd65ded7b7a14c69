"""FSDP2 code rules."""

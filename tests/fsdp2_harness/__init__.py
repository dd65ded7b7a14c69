"""A tiny transformer-like model and a torchrun driver that runs emitted FSDP2 modules."""

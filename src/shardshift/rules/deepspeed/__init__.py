"""DeepSpeed format rules (keys, types, spellings, versions) and DeepSpeed-specific semantics."""

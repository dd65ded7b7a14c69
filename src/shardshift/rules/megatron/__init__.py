"""Rules for Megatron-LM argument lists and launch scripts (MG codes)."""

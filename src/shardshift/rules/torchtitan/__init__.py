"""Rules for torchtitan configs."""

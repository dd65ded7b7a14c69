"""Rules for accelerate configs."""

"""Rules for axolotl configs."""

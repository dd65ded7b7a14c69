"""torchtitan train-config TOML (the format torchtitan read until 2026-02): not read yet."""

FORMAT = "torchtitan"


def looks_like(path: str, text: str) -> bool:
    return False


def read(text: str, path: str = "<string>"):
    raise NotImplementedError("torchtitan TOML is not read yet")

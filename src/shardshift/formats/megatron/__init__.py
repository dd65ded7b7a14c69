"""Megatron-LM: launch scripts and argument files (shell.py)."""

from shardshift.formats.megatron.shell import (  # noqa: F401 - the format's public surface
    Arg,
    Heredoc,
    Launch,
    LaunchScript,
    read_argument_file,
    read_launch_script,
)

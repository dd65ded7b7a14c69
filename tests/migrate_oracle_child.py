"""Judge migrated setups with the frameworks' own parsers (tests/test_migrate_oracle.py), in one
process: torchrun's argument parser takes the launch line, transformers' HfArgumentParser and
TrainingArguments take the Trainer flags with the new fsdp_config, and Accelerate's
FullyShardedDataParallelPlugin takes what TrainingArguments makes of them.

    python migrate_oracle_child.py JOBS.json OUT.json
"""

from __future__ import annotations

import enum
import json
import re
import sys
import tempfile
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")


def _plain(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return value
    return str(value)


def _promised_value(text: str):
    text = text.strip("'\"")
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return text


def judge(job: dict) -> dict:
    from accelerate.utils import FullyShardedDataParallelPlugin
    from torch.distributed.run import get_args_parser
    from transformers import HfArgumentParser, TrainingArguments

    from shardshift.formats.launch import reader
    from shardshift.plan import Unknown

    text = Path(job["script"]).read_text(encoding="utf-8")
    launch = reader.read(text, job["script"]).data.launch
    out = dict(job, torchrun=None, training_arguments=None, plugin=None, read={}, promised={})
    # torchrun's own parser, on the launcher's options as the script gives them (a value the script
    # takes from the environment at run time is left out: $MASTER_PORT from `shuf`)
    argv = []
    for name, value in launch.options.items():
        if isinstance(value, Unknown):
            continue
        argv.append(f"--{name}" if value is True else f"--{name}={value}")
    entry = launch.script if isinstance(launch.script, str) else "train.py"
    try:
        parsed = get_args_parser().parse_args([*argv, entry])
        if launch.launcher != "torchrun" or parsed.training_script != entry:
            out["torchrun"] = f"read as {launch.launcher} {parsed.training_script}"
    except SystemExit:
        out["torchrun"] = f"torchrun refuses {argv}"
    # the Trainer's flags
    flags = []
    for arg in launch.args:
        if arg.flag is None or isinstance(arg.value, Unknown):
            continue
        value = job["config"] if arg.flag == "--fsdp_config" else arg.value
        flags += [arg.flag] if value is None else [arg.flag, *value] if isinstance(value, tuple) else [arg.flag, value]
    with tempfile.TemporaryDirectory() as scratch:
        try:
            args, _ = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(
                [*flags, "--output_dir", scratch, "--use_cpu", "True", "--report_to", "none"],
                return_remaining_strings=True)
        except Exception as error:  # noqa: BLE001 - recorded: the test says what TrainingArguments refused
            out["training_arguments"] = f"{type(error).__name__}: {error}"[:800]
            return out
    plugin = FullyShardedDataParallelPlugin(**args.fsdp_plugin_args)
    out["plugin"] = {"fsdp_version": plugin.fsdp_version, "reshard_after_forward": plugin.reshard_after_forward,
                     "cpu_offload": bool(getattr(plugin.cpu_offload, "offload_params", plugin.cpu_offload))
                     if plugin.fsdp_version == 1 else type(plugin.cpu_offload).__name__ == "CPUOffloadPolicy",
                     "state_dict_type": plugin.state_dict_type.name}
    for item in job["entries"]:
        said = re.findall(r"(--\w+) (\S+(?: \S+)?) added", item["reason"])
        said += re.findall(r"the script's (--\w+) \S+ becomes (\S+(?: \S+)?) \(", item["reason"])
        for flag, value in said:
            out["promised"][flag] = _promised_value(value)
            out["read"][flag] = _plain(getattr(args, flag[2:]))
    return out


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps([judge(job) for job in jobs], indent=1, default=str))


if __name__ == "__main__":
    main()

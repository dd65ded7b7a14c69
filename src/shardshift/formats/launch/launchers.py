"""Launcher lines other than torchrun / deepspeed / srun / python, read by the launch-script walker
(formats/megatron/shell.py calls `detect_other`): `accelerate launch`, `mpirun` / `mpiexec`,
`sbatch SCRIPT`, and the frameworks' own tools that start a launcher themselves (`axolotl train
X.yaml`, `tune run RECIPE --config X.yaml`, `llamafactory-cli train X.yaml`).

Each gives a shell_launch.Launch: `launcher` is "accelerate launch", "mpirun", "mpiexec",
"sbatch", "axolotl train", "tune run" or "llamafactory-cli train"; `options` the launcher's own
options ({name with `_` for `-`: value or True}); `script` the entry (a script, a module after
`-m`, the recipe of `tune run`, the YAML of `axolotl train` / `llamafactory-cli train`, the job
script of sbatch). mpirun starting python starts the ranks itself (as srun does): the launch is
mpirun's, with mpirun's options."""

from __future__ import annotations

from typing import Any

from shardshift.formats.megatron.shell_launch import (
    _ACCELERATE_VALUED,
    _MPIRUN_TWO,
    _MPIRUN_VALUED,
    _SBATCH_VALUED,
    _TORCHRUN_VALUED,
    _flag_of,
    _options,
)

# axolotl's own options of `axolotl train` (axolotl/cli/main.py); every other `--key value` is a
# config override
AXOLOTL_OWN = {"launcher", "cloud", "sweep"}


def _mpi_options(fields: list, i: int) -> tuple[dict, int]:
    """mpirun's options from fields[i] (`-np 8`, `--npernode 4`, `-x VAR=1`, `-mca name value`)."""
    options: dict = {}
    while i < len(fields):
        field = fields[i]
        value = field.value
        if type(value) is not str:
            known = _flag_of(field)
            if known is None and (not field.splice or field.pieces[0].alts):
                break
            if known is not None and known[1]:
                options[known[0].lstrip("-").replace("-", "_")] = value
            else:
                options.setdefault("?", []).append(value)
            i += 1
            continue
        if not value.startswith("-") or value == "--":
            if value == "--":
                i += 1
            break
        name, eq, inline = value.lstrip("-").partition("=")
        key = name if name in ("N", "H", "n", "c", "f", "x") else name.replace("-", "_")
        if eq:
            options[key] = inline
        elif key in _MPIRUN_TWO:
            options[key] = tuple(f.value for f in fields[i + 1:i + 3])
            i += 2
        elif key in _MPIRUN_VALUED:
            options[key] = fields[i + 1].value if i + 1 < len(fields) else None
            i += 1
        else:
            options[key] = True
        i += 1
    return options, i


def _sbatch_options(fields: list, i: int) -> tuple[dict, int]:
    """sbatch's options, with Slurm's own spelling (`ntasks-per-node`), as srun's are kept."""
    options: dict = {}
    while i < len(fields):
        value = fields[i].value
        if type(value) is not str:
            known = _flag_of(fields[i])
            if known is None:
                break
            options.setdefault("?", []).append(value)
            i += 1
            continue
        if not value.startswith("-"):
            break
        name, eq, inline = value.lstrip("-").partition("=")
        if eq:
            options[name] = inline
        elif name in _SBATCH_VALUED and not (len(name) > 1 and value.startswith("-") and not value.startswith("--")):
            options[name] = fields[i + 1].value if i + 1 < len(fields) else None
            i += 1
        elif len(name) > 1 and not value.startswith("--") and name[0] in "NncG":
            options[name[0]] = name[1:]  # `-N2`
        else:
            options[name] = True
        i += 1
    return options, i


def detect_other(walker: Any, name: str, fields: list, i: int, head: Any, via: tuple, tries: int) -> list:
    """The launches of one command whose program is `name` (one of shell_launch._OTHER_LAUNCHERS)."""
    sub = fields[i + 1].value if i + 1 < len(fields) else None
    if name == "accelerate":
        if sub != "launch":
            return []  # accelerate config / env / test
        options, j = _options(fields, i + 2, _ACCELERATE_VALUED)
        return walker.launch("accelerate launch", options, fields, j, head, via, tries)
    if name in ("mpirun", "mpiexec"):
        options, j = _mpi_options(fields, i + 1)
        inner_via = via + ((name, options),)
        inner = walker.detect(fields[j:], inner_via, tries)
        if inner:
            depth = len(inner_via)
            return [launch._replace(launcher=name, options=options, via=via + launch.via[depth:])
                    if launch.launcher == "python" and launch.via[:depth] == inner_via else launch
                    for launch in inner]
        return walker.launch(name, options, fields, j, head, via, tries)
    if name == "sbatch":
        options, j = _sbatch_options(fields, i + 1)
        return walker.launch("sbatch", options, fields, j, head, via, tries)
    if name == "axolotl":
        if sub not in ("train", "fit"):
            return []  # preprocess, inference, merge-lora, ...
        options: dict = {}
        j = i + 2
        while j < len(fields) and type(fields[j].value) is str and fields[j].value.startswith("--"):
            key, eq, inline = fields[j].value[2:].partition("=")
            options[key] = inline if eq else (fields[j + 1].value if j + 1 < len(fields) else None)
            j += 1 if eq else 2
        return walker.launch("axolotl train", options, fields, j, head, via, tries)
    if name == "tune":
        if sub != "run":
            return []  # download, ls, cp, validate
        options, j = _options(fields, i + 2, _TORCHRUN_VALUED)
        return walker.launch("tune run", options, fields, j, head, via, tries)
    if name in ("llamafactory-cli", "lmf"):
        if sub not in ("train", "sft"):
            return []
        return walker.launch("llamafactory-cli train", {}, fields, i + 2, head, via, tries)
    return []

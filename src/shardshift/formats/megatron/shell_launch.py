"""What the launch-script reader (shell.py) gives, and how it reads a launcher line: the launchers'
own options (torchrun, the deepspeed launcher, srun, python), the wrappers in front of them, the
`#SBATCH` allocation srun inherits, and the pairing of Megatron's flags with their values."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from shardshift.formats.megatron.shell_lexer import ASSIGN, _Piece
from shardshift.formats.megatron.shell_values import _FieldP, _Text


class Arg(NamedTuple):
    """One argument: `flag` (None for a positional or an unresolved splice) and its value: a string,
    a tuple for several values, None for a switch, or Unknown. Line and column are the flag's own.

    An unknown splice (`${EXTRA[@]}`, `$ARGS` unknown, a hole in a string) right after a flag is
    taken as that flag's value; after a flag that already has a value it is an Arg of its own
    (flag None), as is an unknown word that starts like a flag (`--${DTYPE}`). `--flag=$X` with X
    unknown is the flag with an Unknown value. `assumed`: the script defaults its value stands on,
    `((variable, value, line, column), ...)` (see shell_lexer._Piece)."""

    flag: str | None
    value: Any
    line: int
    column: int
    text: str
    assumed: tuple = ()


class Launch(NamedTuple):
    """One launcher line: `launcher` (torchrun, deepspeed, srun, python, `python -m
    torch.distributed.run`, or "?" when the program is an unknown word followed by a `.py` entry
    script), its own `options` ({name: value or True}; unknown words spliced among them under
    "?"), the entry `script` (Unknown when any part of its path is), its `args`, where the
    launcher's name is written (`line`, `column`: inside the string, when the command is built in a
    variable and run by eval or `bash -c`), the wrappers around it (`via`: ("srun", options), ("?",
    {"?": [unknown words]}) for an unknown word before the launcher, (name, {}) for a function from
    a file the script sources), the variables at that line, `script_name`: the entry script's file
    name when it is known even though its directory is not (`${DIR}/pretrain_gpt.py`), and
    `conditions`: the undecided branches the launch depends on (empty when it always runs).

    srun's options (as a launcher or in `via`) include the counts it inherits from the job's
    allocation, the `#SBATCH` lines of the script (or of the heredoc given to sbatch) and sbatch's
    own options: `nodes`, `ntasks`, `ntasks-per-node`, `gpus-per-node`, each unless srun sets it
    itself (`-N`/`--nodes`, `-n`/`--ntasks`, ...). A placeholder (`--nodes=your_own_num_nodes`)
    stays as written. `assumed`: {option name: the script defaults its value stands on} (see
    shell_lexer._Piece), for the options whose value does."""

    launcher: str
    options: dict
    script: Any
    args: list
    line: int
    column: int
    via: tuple
    variables: dict
    script_name: str | None = None
    conditions: tuple = ()
    assumed: dict = {}
    # the known end of the entry script's path when its start is known only at run time
    # (`${ROOT}/pkg/train/pretrain.py` -> "pkg/train/pretrain.py"), else None
    script_tail: str | None = None


class Heredoc(NamedTuple):
    target: Any
    text: str
    line: int


class LaunchScript(NamedTuple):
    """`branches`: the undecided `if`/`case` blocks that choose between configurations (two or
    more branches that run to the end and set variables), by where they start: (line, column) ->
    Branches; shell.launch_variants reads a launch again once per choice."""

    path: str
    variables: dict
    launches: list
    heredocs: list
    problems: list
    branches: Any = None


class Branches(NamedTuple):
    """One undecided `if`/`case` that chooses between configurations: `desc` as Unknown reasons
    name it, and each branch that runs to its end and sets variables: (label as in
    Launch.conditions, the short label a message names it by: "when `[ \"$M\" = 7B ]`, line 3")."""

    desc: str
    choices: tuple


_TORCHRUN_VALUED = {"nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_id", "rdzv_backend",
                    "rdzv_endpoint", "rdzv_conf", "max_restarts", "monitor_interval", "start_method", "role",
                    "log_dir", "redirects", "tee", "local_addr", "local_rank", "logs_specs", "local_ranks_filter"}
# the deepspeed launcher's options that take a value (deepspeed/launcher/runner.py parse_args)
_DEEPSPEED_VALUED = DEEPSPEED_VALUED = {"num_gpus", "num_nodes", "hostfile", "H", "include", "i", "exclude", "e", "master_port",
                     "master_addr", "launcher", "launcher_args", "node_rank", "ssh_port", "min_elastic_nodes",
                     "max_elastic_nodes", "autotuning", "comment", "venv_script", "bind_core_list"}
_SRUN_VALUED = {"N", "n", "p", "A", "t", "J", "o", "e", "c", "w", "x", "G", "nodes", "ntasks", "ntasks-per-node",
                "gpus-per-node", "gpus", "partition", "account", "time", "job-name", "output", "error",
                "cpus-per-task", "nodelist", "exclude", "jobid", "container-image", "container-mounts",
                "container-workdir", "mem", "gres", "mpi", "cpu-bind", "distribution", "qos", "reservation",
                "gpus-per-task", "ntasks-per-gpu", "dependency", "kill-on-bad-exit", "wait", "export"}
# accelerate launch's options that take a value (accelerate/commands/launch.py: every option not
# `store_true`); `-m`/`--module` is a switch: the entry that follows is a module
_ACCELERATE_VALUED = {
    "aws_access_key_id", "aws_secret_access_key", "config_file", "deepspeed_config_file", "deepspeed_exclusion_filter",
    "deepspeed_hostfile", "deepspeed_inclusion_filter", "deepspeed_moe_layer_cls_names", "deepspeed_multinode_launcher",
    "dynamo_backend", "dynamo_mode", "env", "fp8_amax_compute_algo", "fp8_amax_history_len", "fp8_backend",
    "fp8_enable_fsdp_float8_all_gather", "fp8_format", "fp8_interval", "fp8_margin", "fp8_opt_level",
    "fp8_override_linear_precision", "fp8_pad_inner_dim", "fsdp_activation_checkpointing",
    "fsdp_activation_checkpointing_offload", "fsdp_auto_wrap_policy", "fsdp_backward_prefetch",
    "fsdp_cpu_ram_efficient_loading", "fsdp_forward_prefetch", "fsdp_min_num_params", "fsdp_offload_params",
    "fsdp_reshard_after_forward", "fsdp_sharding_strategy", "fsdp_state_dict_type", "fsdp_sync_module_states",
    "fsdp_transformer_layer_cls_to_wrap", "fsdp_use_orig_params", "fsdp_version", "gpu_ids",
    "gradient_accumulation_steps", "gradient_clipping", "log_dir", "machine_rank", "main_process_ip",
    "main_process_port", "main_training_function", "max_restarts", "megatron_lm_attention_backend",
    "megatron_lm_attention_dropout", "megatron_lm_attention_softmax_in_fp32", "megatron_lm_calculate_per_token_loss",
    "megatron_lm_context_parallel_size", "megatron_lm_decoder_last_pipeline_num_layers", "megatron_lm_eod_mask_loss",
    "megatron_lm_expert_model_parallel_size", "megatron_lm_expert_tensor_parallel_size",
    "megatron_lm_gradient_clipping", "megatron_lm_hidden_dropout", "megatron_lm_no_load_optim",
    "megatron_lm_no_save_optim", "megatron_lm_num_micro_batches", "megatron_lm_optimizer_cpu_offload",
    "megatron_lm_overlap_cpu_optimizer_d2h_h2d", "megatron_lm_pp_degree", "megatron_lm_recompute_activations",
    "megatron_lm_recompute_granularity", "megatron_lm_recompute_method", "megatron_lm_recompute_num_layers",
    "megatron_lm_sequence_parallelism", "megatron_lm_tp_degree", "megatron_lm_use_custom_fsdp",
    "megatron_lm_use_distributed_optimizer", "megatron_lm_use_precision_aware_optimizer",
    "megatron_lm_use_rotary_position_embeddings", "mixed_precision", "monitor_interval", "mpirun_hostfile",
    "no_tpu_cluster", "num_cpu_threads_per_process", "num_machines", "num_processes", "offload_optimizer_device",
    "offload_optimizer_nvme_path", "offload_param_device", "offload_param_nvme_path", "parallelism_config_cp_backend",
    "parallelism_config_cp_comm_strategy", "parallelism_config_cp_size", "parallelism_config_dp_replicate_size",
    "parallelism_config_dp_shard_size", "parallelism_config_sp_attn_implementation", "parallelism_config_sp_backend",
    "parallelism_config_sp_seq_length", "parallelism_config_sp_seq_length_is_variable", "parallelism_config_sp_size",
    "parallelism_config_tp_size", "rdzv_backend", "rdzv_conf", "role", "t", "tee", "vm", "zero3_init_flag",
    "zero3_save_16bit_model", "zero_stage"}
# mpirun / mpiexec (Open MPI, MPICH/Hydra, Intel MPI): options that take one value (`-mca`/`--mca`
# takes two: a name and a value)
_MPIRUN_VALUED = {"np", "n", "c", "N", "npernode", "ppn", "H", "host", "hosts", "hostfile", "machinefile", "f",
                  "x", "map_by", "bind_to", "rank_by", "wdir", "wd", "genv", "env", "output_filename",
                  "report_bindings", "prefix", "launcher", "bootstrap", "iface", "rankfile", "npersocket",
                  "cpus_per_proc", "cpus_per_rank", "timeout", "tag_output_filename", "merge_stderr_to_stdout"}
_MPIRUN_TWO = {"mca", "gmca", "genv", "env"}
# sbatch's options that take a value (as srun's, plus its own)
_SBATCH_VALUED = _SRUN_VALUED | {"array", "chdir", "D", "begin", "mail-type", "mail-user", "constraint", "C",
                                 "mem-per-cpu", "mem-per-gpu", "signal", "requeue", "open-mode", "parsable"}
# `tune run`'s own options before the recipe are torchrun's (torchtune/_cli/run.py)
# launchers other than torchrun / deepspeed / srun / python: `accelerate launch`, mpirun, mpiexec,
# sbatch, and the frameworks' own command-line tools
_OTHER_LAUNCHERS = {"accelerate", "mpirun", "mpiexec", "sbatch", "axolotl", "tune", "llamafactory-cli", "lmf"}
_PYTHON_VALUED = {"-X", "-W", "-c"}
_PYTHON = re.compile(r"python[0-9.]*")
_SHELLS = {"bash", "sh", "dash", "zsh", "ksh"}
_TORCHRUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
_COUNTS = (("nodes", "N"), ("ntasks", "n"), ("ntasks-per-node", None), ("gpus-per-node", None))
_SLURM_VARIABLES = {"nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"), "ntasks": ("SLURM_NTASKS", "SLURM_NPROCS"),
                    "ntasks-per-node": ("SLURM_NTASKS_PER_NODE",), "gpus-per-node": ("SLURM_GPUS_PER_NODE",)}
# commands that never run their arguments as a command (so `echo python x.py` is no launch)
_NOT_WRAPPERS = {"echo", "printf", "cat", "which", "type", "hash", "export", "declare", "local", "readonly", "set",
                 "unset", "test", "[", "[[", "cd", "pushd", "popd", "ls", "mkdir", "rm", "cp", "mv", "touch", "tee",
                 "grep", "sed", "awk", "head", "tail", "cut", "sort", "wc", "find", "chmod", "ln", "wait", "kill",
                 "sleep", "pip", "pip3", "git", "wget", "curl", "jq", "true", "false", "shift", "read", "alias"}
_WRAPPER_OPTIONS = {"env": {"-u", "-C", "-S", "--unset", "--chdir"}, "nice": {"-n", "--adjustment"},
                    "exec": {"-a"}, "time": {"-f", "-o"}, "taskset": set(), "stdbuf": {"-i", "-o", "-e"},
                    "nohup": set(), "command": set()}


def tail_of(field: _FieldP) -> str | None:
    """The known text after the last unknown part of a command word's path, when it names folders
    as well as the file (`${ROOT}/pkg/train/pretrain.py` -> "pkg/train/pretrain.py")."""
    atoms = field.pieces
    if type(field.value) is str or not atoms or type(atoms[-1]) is not _Piece:
        return None
    tail = atoms[-1].text.lstrip("/")
    return tail if "/" in tail else None


def _name_of(field: _FieldP) -> str | None:
    """The file name of a command word: known when the text after its last `/` is."""
    value = field.value
    if type(value) is str:
        return value.rsplit("/", 1)[-1]
    atoms = field.pieces
    if atoms and type(atoms[-1]) is _Piece and "/" in atoms[-1].text:
        return atoms[-1].text.rsplit("/", 1)[-1] or None
    return None


def _is_launcher(name: str | None) -> bool:
    return name is not None and (name in ("srun", "torchrun", "deepspeed") or name in _OTHER_LAUNCHERS
                                 or _PYTHON.fullmatch(name) is not None)


def _skip_wrappers(fields: list) -> int:
    """Where the program starts after `env X=1`, `nohup`, `exec`, `time`, `nice -n 5`, `uv run`,
    `nsys profile -o x`, ..."""
    i, n = 0, len(fields)
    while i < n:
        value = fields[i].value
        if type(value) is not str:
            break
        if value in _WRAPPER_OPTIONS:
            valued = _WRAPPER_OPTIONS[value]
            i += 1
            while i < n and type(fields[i].value) is str and fields[i].value.startswith("-"):
                if value == "taskset" and fields[i].value in ("-c", "--cpu-list", "-p"):
                    i += 1
                i += 2 if fields[i].value in valued else 1
            if value == "taskset" and i < n:
                i += 1  # the mask
            continue
        if "=" in value and ASSIGN.match(value):
            i += 1
            continue
        if value == "nsys" and i + 1 < n and fields[i + 1].value in ("profile", "launch"):
            i += 2
            while i < n and type(fields[i].value) is str and fields[i].value.startswith("-"):
                nxt = fields[i + 1] if i + 1 < n else None
                takes = "=" not in fields[i].value and nxt is not None and not _is_launcher(_name_of(nxt)) and \
                    not (type(nxt.value) is str and nxt.value.startswith("-"))
                i += 2 if takes else 1
            continue
        if value in ("uv", "conda", "poetry", "pipenv") and i + 1 < n and fields[i + 1].value == "run":
            i += 2
            while i < n and type(fields[i].value) is str and fields[i].value.startswith("-"):
                i += 2 if fields[i].value in ("-n", "-p", "--name", "--prefix", "--with", "--python") else 1
            continue
        break
    return i


def _dash_c(fields: list, i: int) -> _FieldP | None:
    """The command string of `bash [options] -c STRING`."""
    j = i + 1
    while j < len(fields) and type(fields[j].value) is str and fields[j].value[:1] in ("-", "+"):
        option = fields[j].value
        if option == "--":
            return None
        if option[0] == "-" and not option.startswith("--") and "c" in option[1:]:
            return fields[j + 1] if j + 1 < len(fields) else None
        j += 2 if option in ("-o", "+o", "-O", "+O") else 1
    return None


def _flag_of(field: _FieldP) -> tuple[str, bool] | None:
    """For an unknown word that starts like a flag: (the flag, True) when the flag is known and
    only its `=value` is not (`--lr=$LR`); (None, False) when the flag's name itself is unknown."""
    first = field.pieces[0] if field.pieces else None
    if type(first) is not _Piece or not first.text.startswith("-") or _NUMBER.match(first.text):
        return None
    flag, eq, _ = first.text.partition("=")
    if eq and len(flag) > 1:
        return flag, True
    return None, False


def _options(fields: list, i: int, valued: set) -> tuple[dict, int]:
    """The launcher's own options from fields[i]: {name: value or True}, and where they stop."""
    options: dict = {}
    while i < len(fields):
        field = fields[i]
        value = field.value
        if type(value) is not str:
            known = _flag_of(field)
            if known is None and (not field.splice or field.pieces[0].alts):
                break  # a word partly known (`$DIR/train.py`), or one that may be the entry script
            if known is not None and known[1]:
                name = known[0].lstrip("-")
                options[name.replace("-", "_") if valued is not _SRUN_VALUED else name] = value
            else:
                options.setdefault("?", []).append(value)
            i += 1
            continue
        if not value.startswith("-") or value == "--":
            if value == "--":
                i += 1
            break
        name, eq, inline = value.lstrip("-").partition("=")
        key = name.replace("-", "_") if valued is not _SRUN_VALUED else name
        if eq:
            options[key] = inline
        elif key in valued or name in valued:
            options[key] = fields[i + 1].value if i + 1 < len(fields) else None
            i += 1
        else:
            options[key] = True
        i += 1
    return options, i


def _inherit(options: dict, allocation: dict) -> None:
    """srun takes each count it does not set from the job's allocation (`#SBATCH`)."""
    for long, short in _COUNTS:
        if long in allocation and long not in options and (short is None or short not in options):
            options[long] = allocation[long][0]


def _srun_starts_python(launch: Launch, inner_via: tuple, options: dict, via: tuple,
                        launcher: str = "srun") -> Launch:
    """srun (or `deepspeed --no_python`) starting python, possibly through a shell or an unknown
    wrapper: the ranks are the launcher's, so the launch is the launcher's, with its options."""
    depth = len(inner_via)
    if launch.launcher != "python" or launch.via[:depth] != inner_via or \
            any(name != "?" for name, _ in launch.via[depth:]):
        return launch
    return launch._replace(launcher=launcher, options=options, via=via + launch.via[depth:])


def _allocation(text: str) -> dict:
    """The counts of the `#SBATCH` lines at the top of a script: {count: (value, line, column)}."""
    out: dict = {}
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if not stripped.startswith("#SBATCH"):
            continue
        words = re.split(r"\s#", stripped[7:], maxsplit=1)[0].split()
        k = 0
        while k < len(words):
            word = words[k]
            column = line.find(word) + 1
            for long, short in _COUNTS:
                if word.startswith(f"--{long}="):
                    out[long] = (word.split("=", 1)[1], number, column)
                elif word == f"--{long}" and k + 1 < len(words):
                    out[long] = (words[k + 1], number, column)
                    k += 1
                elif short and word == f"-{short}" and k + 1 < len(words):
                    out[long] = (words[k + 1], number, column)
                    k += 1
                elif short and word.startswith(f"-{short}") and len(word) > 2 and word[2:].isdigit():
                    out[long] = (word[2:], number, column)
            k += 1
    return out


def _seed(env: dict, allocation: dict) -> None:
    """The SLURM_* variables a job gets from its allocation, when given as numbers."""
    for long, (value, line, column) in allocation.items():
        if value.isdigit():
            for name in _SLURM_VARIABLES[long]:
                env.setdefault(name, _Text((_Piece(value, line, column),), value))


_NUMBER = re.compile(r"-\.?[0-9]")


def assumed_of(field: Any) -> tuple:
    """The script defaults a word (`_FieldP`) or value (`_Text`) stands on, each once."""
    atoms = field.pieces if hasattr(field, "pieces") else getattr(field, "atoms", ())
    found: tuple = ()
    for a in atoms:
        extra = getattr(a, "assumed", ())
        if extra and type(extra) is tuple:
            found += extra
    return tuple(dict.fromkeys(found)) if found else ()


def _pair(fields: list) -> list:
    """Flags with their values: `--flag v`, `--flag=v`, `--flag v1 v2` (a tuple), `--switch` (None);
    unknown words as the Arg docstring says."""
    args: list = []
    current = None
    values: list = []

    assumed: list = []

    def finish() -> None:
        if current is not None:
            value = None if not values else values[0] if len(values) == 1 else tuple(values)
            args.append(Arg(current[0], value, current[1].line, current[1].column, current[2],
                            tuple(dict.fromkeys(assumed)) if assumed else ()))
        assumed.clear()

    for f in fields:
        v = f.value
        if type(v) is str:
            if v.startswith("-") and len(v) > 1 and not _NUMBER.match(v):
                finish()
                flag, eq, inline = v.partition("=")
                if eq and flag.startswith("--"):
                    current, values = (flag, f, f.raw), [inline]
                else:
                    current, values = (v, f, f.raw), []
                assumed.extend(assumed_of(f))
                continue
        else:
            known = _flag_of(f)
            if known is not None:
                finish()
                if known[1]:
                    current, values = (known[0], f, f.raw), [v]
                    assumed.extend(assumed_of(f))
                else:
                    current, values = None, []
                    args.append(Arg(None, v, f.line, f.column, f.raw))
                continue
            if f.splice and current is not None and (values or f.splice == 2):
                finish()
                current, values = None, []
                args.append(Arg(None, v, f.line, f.column, f.raw))
                continue
        if current is None:
            args.append(Arg(None, v, f.line, f.column, f.raw, assumed_of(f)))
        else:
            values.append(v)
            assumed.extend(assumed_of(f))
            current = (current[0], current[1], current[2] + " " + f.raw)
    finish()
    return args

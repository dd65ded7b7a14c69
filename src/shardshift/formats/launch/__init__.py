"""Launch scripts of every framework (torchrun, deepspeed, accelerate launch, srun, sbatch, mpirun,
python): the world they start, the config files they link and the values their command lines
override."""

from shardshift.formats.launch.reader import (  # noqa: E402,F401
    FORMAT,
    is_config,
    looks_like,
    not_config_reason,
    precedence,
    read,
)

"""accelerate rules (see the rule classes)."""

from __future__ import annotations

from shardshift.rules.accelerate.config import (  # noqa: F401
    DistributedTypeIgnoresSettings,
    DuplicateFsdpKey,
    Fsdp1KeyUnderFsdp2,
    InvalidValue,
    LayerClassNamesSpaced,
    LegacyTopLevelKey,
    ProcessesNotMultipleOfMachines,
    ReshardIgnoredUnderFsdp1,
    SyncModuleStatesOff,
    TwoEngines,
    UnknownNestedKey,
    UnknownTopLevelKey,
    UnquotedNo,
    ValueOfWrongType,
    Yaml11Number,
)
from shardshift.rules.accelerate.launch import (  # noqa: F401
    DeepSpeedConfigFileMissing,
    DeepSpeedConfigWithoutZero,
    InvalidFp8Config,
    InvalidParallelismConfig,
    MultiMachineWithoutMainProcess,
    TooFewGpuIds,
)

"""MG301's rows (src/shardshift/rules/megatron/refused.py), one module per part of Megatron's argument path,
each row a check site of the coverage map (src/shardshift/data/coverage/megatron.tsv) in source order, or (implicit.py)
an implicit site of src/shardshift/data/coverage/megatron-implicit.tsv."""

from shardshift.rules.megatron.refusals import (
                                               config_a,
                                               config_b,
                                               implicit,
                                               optimizer,
                                               specs,
                                               startup,
                                               training,
                                               validate_a,
                                               validate_b,
)

ROWS = [*validate_a.ROWS, *validate_b.ROWS, *config_a.ROWS, *config_b.ROWS, *startup.ROWS, *specs.ROWS, *optimizer.ROWS,
        *training.ROWS, *implicit.ROWS]

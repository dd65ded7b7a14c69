"""MG301 rows: `validate_args` (megatron/training/arguments.py), its sites 1-100."""

from shardshift.rules.megatron.refused import Refusal

ROWS = [
    Refusal("megatron/training/arguments.py:validate_args:6", "attention_backend",
            lambda v: str(v("attention_backend")).rsplit(".", 1)[-1] == "local" and
            (v("spec") is None or v("spec")[0] != "local"),
            "it asserts `args.spec[0] == 'local'`, a TypeError while --spec is unset: the local attention "
            "backend is only supported with --spec local",
            "add `--spec local`, or use another --attention-backend", involved=("spec",)),
]

"""What the DeepSpeed writer says about a schedule without warm-up is what DeepSpeed's own
schedulers do (deepspeed.runtime.lr_schedules on a torch optimizer, on the CPU): each refuses
warmup_num_steps 0, and the ds_config written in its place runs the learning rates the report states."""

from __future__ import annotations

import pytest

from fsdp2_harness.configs import deepspeed_lrs

pytestmark = pytest.mark.oracle
pytest.importorskip("torch")
pytest.importorskip("deepspeed")


def _written(kind: str, **params) -> tuple[dict, str]:
    from shardshift.formats.deepspeed.writer import _no_warmup

    config = {"optimizer": {"type": "AdamW", "params": {"lr": 1.0}},
              "scheduler": {"type": kind, "params": {"warmup_num_steps": 0, **params}}}
    entries = _no_warmup(config)
    assert len(entries) == 1 and entries[0].status == "approximate"
    return config, entries[0].reason


@pytest.mark.parametrize("kind,params", [("WarmupLR", {"warmup_max_lr": 1.0}),
                                         ("WarmupDecayLR", {"warmup_max_lr": 1.0, "total_num_steps": 10}),
                                         ("WarmupCosineLR", {"total_num_steps": 10, "cos_min_ratio": 0.1})])
def test_deepspeed_refuses_no_warmup(kind, params):
    with pytest.raises(ValueError, match="warmup_num_steps must be a positive integer"):
        deepspeed_lrs({"scheduler": {"type": kind, "params": {"warmup_num_steps": 0, **params}}}, 1)


def test_warmup_lr_at_its_peak_runs_every_step_at_the_full_rate():
    config, reason = _written("WarmupLR", warmup_max_lr=1.0)
    assert "every step runs at the full rate" in reason
    lrs, _ = deepspeed_lrs(config, 6)
    assert lrs == [1.0] * 7


@pytest.mark.parametrize("warmup_type,said,first", [
    ("linear", "steps 1 and 2 at warmup_min_lr, step 3 halfway, step 4 at the peak, then the linear decay",
     [0.0, 0.0, 0.5, 1.0]),
    ("log", "steps 1 and 2 at warmup_min_lr, step 3 at the peak, then the linear decay", [0.0, 0.0, 1.0, 1.0])])
def test_warmup_decay_lr_keeps_a_two_step_warmup_from_its_minimum(warmup_type, said, first):
    config, reason = _written("WarmupDecayLR", warmup_max_lr=1.0, warmup_min_lr=0.0, total_num_steps=10,
                              warmup_type=warmup_type)
    assert said in reason, reason
    lrs, _ = deepspeed_lrs(config, 6)
    assert lrs[:4] == first and lrs[5] < lrs[4] < 1.0


def test_warmup_cosine_lr_runs_its_first_step_at_zero_then_the_peak():
    config, reason = _written("WarmupCosineLR", total_num_steps=10, cos_min_ratio=0.1)
    assert "step 1 at learning rate 0" in reason and "steps 2 and 3 at the full rate, then the cosine" in reason
    lrs, _ = deepspeed_lrs(config, 6)
    assert lrs[:3] == [0.0, 1.0, 1.0] and lrs[3] < 1.0 and lrs[4] < lrs[3]


def test_zero3_checks_fp16_gradients_only_so_bf16_steps_are_never_skipped(tmp_path):
    """The FSDP2 output of a ZeRO-3 bf16 config applies every step (SKIP_NONFINITE_STEPS = False), and DS316 says
    nothing of check_grad_overflow there, because DeepSpeed's ZeRO-3 optimizer (read from the installed release)
    checks for overflow under fp16 only and is never given check_grad_overflow."""
    import ast
    import inspect
    import textwrap

    from deepspeed.runtime.engine import DeepSpeedEngine
    from deepspeed.runtime.zero.stage3 import DeepSpeedZeroOptimizer_Stage3

    from shardshift import api

    assert "check_grad_overflow" not in inspect.signature(DeepSpeedZeroOptimizer_Stage3.__init__).parameters
    # the class's own source: the method is wrapped (instrument_w_nvtx), so its attribute is the wrapper
    cls = ast.parse(textwrap.dedent(inspect.getsource(DeepSpeedZeroOptimizer_Stage3)))
    method = next(node for node in ast.walk(cls) if isinstance(node, ast.FunctionDef)
                  and node.name == "_overflow_check_and_loss_scale_update")
    guards = [ast.unparse(node.test) for node in ast.walk(method) if isinstance(node, ast.If)
              and any("check_overflow" in ast.unparse(statement) for statement in node.body)]
    assert guards == ["self.dtype == torch.float16"], guards
    engine = ast.parse(textwrap.dedent(inspect.getsource(DeepSpeedEngine._configure_zero_optimizer)))
    stage3 = [node for node in ast.walk(engine) if isinstance(node, ast.Call)
              and ast.unparse(node.func) == "Stage3ZeroOptimizer"]
    assert stage3 and all("check_grad_overflow" not in {k.arg for k in call.keywords} for call in stage3)

    config = tmp_path / "ds_config.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}, '
                      '"bf16": {"enabled": true}}', encoding="utf-8")
    assert "SKIP_NONFINITE_STEPS = False" in api.convert(str(config), "fsdp2").text
    assert not [f for f in api.check([str(config)]).findings if f.code == "DS316"]

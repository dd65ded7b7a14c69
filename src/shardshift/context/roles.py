"""What a ds_config is for, told from the file itself and where it lies: an inference config, a
file of a vendored DeepSpeed copy. Kept small and apart from `repository` (the index of a
repository's code), which these checks load only when the file itself does not decide."""

from __future__ import annotations

import os

from shardshift.files import shown as _shown


def framework_data(path: str) -> tuple[str, str] | None:
    """The vendored DeepSpeed whose own file `path` is: a JSON inside its `deepspeed` package (its
    autotuning templates), or in its source tree (its tests and examples: a folder holding
    `deepspeed/__init__.py` and `setup.py`). (the folder, the file that shows it), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(8):
        if os.path.basename(folder) == "deepspeed" and os.path.isfile(os.path.join(folder, "__init__.py")):
            return _shown(folder), _shown(os.path.join(folder, "__init__.py"))
        package = os.path.join(folder, "deepspeed", "__init__.py")
        if os.path.isfile(package) and os.path.isfile(os.path.join(folder, "setup.py")):
            return _shown(folder), _shown(package)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None



# Keys only DeepSpeed's inference config (DeepSpeedInferenceConfig, deepspeed/inference/config.py) has,
# and keys only a training config has.
INFERENCE_KEYS = ("replace_with_kernel_inject", "tensor_parallel", "mp_size", "enable_cuda_graph",
                  "injection_policy", "replace_method", "max_out_tokens", "min_out_tokens", "max_tokens",
                  "use_triton", "triton_autotune", "return_tuple", "training_mp_size")
TRAINING_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "optimizer",
                 "scheduler", "gradient_clipping")


def inference_role(document, context) -> tuple[str, str, int] | None:
    """Evidence that a ds_config is an inference config (what, file, line), or None: it has keys
    only DeepSpeed's inference config has and none only a training config has, or the only code in
    the repository that names it passes it to `deepspeed.init_inference`."""
    data = document.data
    if any(k in data for k in TRAINING_KEYS):
        return None
    for key in INFERENCE_KEYS:
        if key in data:
            line, _ = document.position("/" + key, key=True)
            return (f"an inference config: {key!r} is a key of DeepSpeed's inference config "
                    "(deepspeed.init_inference), and it has no training key", _shown(document.path), line)
    from shardshift.context.repository import _index, read_text

    name = os.path.basename(document.path)
    tops = getattr(context, "roots", ())
    index = _index(document.path, tops)
    users = [(file, read_text(file) or "") for file in index.py_mentions.get(name, ())]
    if users and all("init_inference(" in text and "initialize(" not in text and "TrainingArguments" not in text
                     for _, text in users):
        file, text = users[0]
        return ("an inference config: the code that names it passes a config to deepspeed.init_inference",
                _shown(file), text.count("\n", 0, text.find("init_inference(")) + 1)
    return None

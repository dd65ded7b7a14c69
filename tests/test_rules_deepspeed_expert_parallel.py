"""DS446's expert_activation check rests on the program: a name DeepSpeed lacks is refused unless the
script that reads the file registers it first (deepspeed.moe.ep_experts.register_expert_activation)."""

from __future__ import annotations

import json

from conftest import check_json


def test_an_unregistered_expert_activation_is_judged_by_the_script_that_reads_the_file(tmp_path):
    config = {"train_micro_batch_size_per_gpu": 1, "expert_parallel": {"enabled": True, "expert_activation": "relu2"}}
    initialize = ("import deepspeed\nmodel = build()\n"
                  "deepspeed.initialize(model=model, model_parameters=model.parameters(), config='ds.json')\n")
    cases = {"alone": None, "plain": initialize,
             "registers": "from deepspeed.moe.ep_experts import register_expert_activation\n"
                          "register_expert_activation('relu2', fn=lambda x: x)\n" + initialize}
    found = {}
    for name, script in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ds.json").write_text(json.dumps(config))
        if script:
            (folder / "train.py").write_text(script)
        _, output = check_json("--select", "DS446", str(folder))
        found[name] = [f["severity"] for f in output["findings"] if "expert_activation" in f["message"]]
    assert found == {"alone": ["info"], "plain": ["error"], "registers": []}

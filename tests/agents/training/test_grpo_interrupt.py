"""Ctrl-C (or SIGTERM, a batch scheduler's stop) during GRPO ends the run early and keeps its work: the model so far, every rewarded
episode and the reward curve, written as for a finished run, with the step it stopped at."""

from __future__ import annotations

import json
import os
import signal

import pytest
from transformers import TrainerCallback

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.training.recipe import EnvSettings, GRPORecipe, GRPOSettings, ModelSettings
from conductor_env.agents.training.trainer import train_grpo

SMALL_RG = {"datasets": ["basic_arithmetic", "spell_backward"], "size": 3}


class SignalAfterFirstStep(TrainerCallback):
    """Sends this process a real signal as the second optimizer step begins."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == 1:
            os.kill(os.getpid(), self.signum)


@pytest.fixture
def terminal_sigint():
    """Python's Ctrl-C handler, as in a terminal: a process started in the background by a
    non-interactive shell (``cmd &``) inherits SIGINT ignored, and Python then installs none."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_saves_its_model_and_episodes(tmp_path, signum, terminal_sigint):
    recipe = GRPORecipe(
        model=ModelSettings(lora_r=8, lora_top_layers=2),
        env=EnvSettings(suite_options=SMALL_RG, options={"examples": "none"}, problems=4),
        grpo=GRPOSettings(max_steps=5, questions_per_step=1, num_generations=2, max_completion_length=16, learning_rate=1e-5),
        output_dir=str(tmp_path),
    )
    lines: list[str] = []
    run = train_grpo(recipe, callbacks=[SignalAfterFirstStep(signum)], say=lines.append)
    assert run.interrupted_at_step == 1
    assert any("interrupted after 1 of 5 steps" in line for line in lines)
    assert len(run.records) == 2 and {r.step for r in run.records} == {0}  # one step of 1 question x 2 samples
    saved = json.loads((tmp_path / "rewards.json").read_text())
    assert saved["interrupted_at_step"] == 1 and len(saved["episodes"]) == 2 and len(saved["rewards"]) == 1
    adapter = json.loads((tmp_path / "final" / "adapter_config.json").read_text())  # the LoRA so far, as PEFT saves it
    assert adapter["base_model_name_or_path"] == "gemma3-270m" and (tmp_path / "final" / "conductor.json").is_file()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was only for training

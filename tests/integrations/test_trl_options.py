"""The user's TRL choices: ``report_to`` is a recipe option, and the one private TRL switch the
package wraps is left alone on TRL releases it was not checked on."""

from __future__ import annotations

import pytest

from conductor_env.agents.training.model import score_only_completions_on_cpu
from conductor_env.agents.training.recipe import GRPORecipe, GRPOSettings
from conductor_env.agents.training.trl_config import grpo_config


def test_report_to_is_the_users_choice_defaulting_to_none():
    assert grpo_config(GRPORecipe()).report_to == []  # transformers' spelling of "none"
    assert grpo_config(GRPORecipe(grpo=GRPOSettings(report_to="tensorboard"))).report_to == ["tensorboard"]
    assert grpo_config(GRPORecipe(grpo=GRPOSettings(report_to="tensorboard, trackio"))).report_to == ["tensorboard", "trackio"]


def test_report_to_is_a_train_flag():
    from conductor_env.cli import build_parser
    from conductor_env.cli.train import recipe_from_args

    assert recipe_from_args(build_parser().parse_args(["train", "grpo", "--report-to", "tensorboard"]))[1].grpo.report_to == "tensorboard"


@pytest.fixture()
def trl_switch(monkeypatch):
    """TRL's private switch, reset to a plain function for each test (and restored after)."""
    import trl
    from trl.trainer import utils as trl_utils

    def plain(device):
        return False

    monkeypatch.setattr(trl_utils, "_use_triton", plain)
    return trl, trl_utils, plain


@pytest.mark.parametrize("version", ["1.17.0", "2.0.0", "0.29.1", ""])
def test_the_private_switch_is_left_alone_on_unverified_trl(trl_switch, monkeypatch, version):
    trl, trl_utils, plain = trl_switch
    monkeypatch.setattr(trl, "__version__", version)
    assert score_only_completions_on_cpu() is False
    assert trl_utils._use_triton is plain


def test_the_private_switch_is_left_alone_when_its_signature_changed(trl_switch, monkeypatch):
    import torch

    trl, trl_utils, _ = trl_switch
    monkeypatch.setattr(trl, "__version__", "1.16.0")

    def changed(device, compile_mode):
        return False

    monkeypatch.setattr(trl_utils, "_use_triton", changed)
    assert score_only_completions_on_cpu() is False and trl_utils._use_triton is changed
    monkeypatch.setattr(trl_utils, "_use_triton", lambda device: False)  # honest control: the verified shape is wrapped
    assert score_only_completions_on_cpu() is True
    assert trl_utils._use_triton(torch.device("cpu")) is True and trl_utils._use_triton(torch.device("meta")) is False

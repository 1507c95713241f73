"""GEM (the real gem-llm, in .venv-gem) shows no gold before a two-round episode ends, for every suite kind.

The kinds, the wrong workers and the search are those of test_no_gold_before_end.py
(integrations/gold_channels.py); test_gem_venv.py runs this file in .venv-gem.
"""

from __future__ import annotations

import json

import pytest

gem = pytest.importorskip("gem")

from gem.utils.constants import TERMINAL_STATE  # noqa: E402

import conductor_env.integrations.gem  # noqa: E402,F401  (registers conductor:<Name>-v0)
from conductor_env.verdicts import PUBLIC_REASONS  # noqa: E402
from integrations.gold_channels import KINDS, SOLVE, Kind, leaks, prepare, strings  # noqa: E402

ACTION = json.dumps(SOLVE)


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_gem_steps_show_no_gold_before_the_end(kind: Kind, tmp_path) -> None:
    prepared = prepare(kind, tmp_path)
    env = gem.make("conductor:" + kind.env_id.removeprefix("Conductor-"), **prepared.kwargs)
    try:
        prompt, reset_info = env.reset(row=prepared.row)
        observation, reward, terminated, truncated, info = env.step(ACTION)
        before = strings([prompt, reset_info, observation, reward, info])
        last, _, terminated_last, _, final = env.step(ACTION)
    finally:
        env.close()
    assert last == TERMINAL_STATE and terminated_last
    reason = final["round_reasons"][0]
    secrets = prepared.secrets(reason)
    assert not leaks(before, secrets), leaks(before, secrets)
    assert not (terminated or truncated) and info["reason"] in PUBLIC_REASONS
    assert reason in secrets and final["reason"] == final["round_reasons"][1]
    assert leaks(strings(final), secrets)  # the last step carries the grader's reason

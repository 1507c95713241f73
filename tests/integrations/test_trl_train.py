"""One real TRL GRPO step through the environment path: TRL builds the tool schema from
ConductorToolEnv, the model's tool calls are parsed and run as rounds, and the episode reward and
the package's metrics are logged (a tiny random model built offline, made to call the tool)."""

from __future__ import annotations

import pytest

from conductor_env.integrations.trl import conductor_dataset, conductor_environments, conductor_tool_reward
from conductor_env.integrations.trl_smoke import tiny_tool_caller
from integrations.test_trl_env import SMALL_RG, sure_pool


@pytest.mark.slow
@pytest.mark.parametrize("worker, reward", [(0, 1.0), (1, None)])
def test_a_real_grpo_step_plays_every_round_as_a_tool_call(tmp_path, monkeypatch, worker, reward):
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    environments = conductor_environments("Conductor-RG-v0", pool=sure_pool(), suite_options=SMALL_RG, max_rounds=2)
    try:
        dataset = conductor_dataset(environments, limit=2, tools=True)
        probe = environments()
        prompts = [[*row["prompt"][:-1], {"role": "user", "content": probe.reset(**dict(row))}] for row in dataset]
        call = {"model_id": [worker], "subtasks": ["Solve it."], "access_list": [[]]}
        model, tokenizer, generation = tiny_tool_caller(prompts, call, probe.run_workflow)
        args = GRPOConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=256,
            max_tool_calling_iterations=3,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            generation_kwargs=generation,
        )
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=conductor_tool_reward, environment_factory=environments, train_dataset=dataset, args=args)
        assert [tool.__name__ for tool in trainer.tools] == ["run_workflow"]
        trainer.train()
    finally:
        environments.close()
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == 2.0 and logged["tools/failure_frequency"] == 0.0  # two rounds, both run
    assert logged["conductor/rounds"] == 2.0 and logged["conductor/parse_rate"] == 1.0
    assert all(env._calls == 2 and env._done for env in trainer.environments)
    if reward is None:  # the wrong worker: the env's own reward for a wrong answer, below a right one's
        assert logged["conductor/accuracy"] == 0.0 and logged["rewards/conductor_tool_reward/mean"] < 1.0
    else:
        assert logged["conductor/accuracy"] == 1.0 and logged["rewards/conductor_tool_reward/mean"] == reward

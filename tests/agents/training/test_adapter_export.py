"""Exporting a trained Conductor as a LoRA adapter, and loading it back through the local backend.

A "trained" model is the real Gemma 3 270M base plus known low-rank deltas (rank 4 on a query
projection, rank 16 on an MLP down projection of the top layer), saved as a full model folder.
"""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from safetensors import safe_open  # noqa: E402 - the imports need torch and peft, skipped above when missing
from safetensors.torch import load_file, save_file  # noqa: E402

from conductor_env.agents.llm import trained_conductor_config  # noqa: E402
from conductor_env.agents.training.adapter import AdapterReport, export_adapter  # noqa: E402
from conductor_env.cli import main  # noqa: E402
from conductor_env.workers.local_engine import LocalEngine  # noqa: E402
from conductor_env.workers.local_models import resolve_model  # noqa: E402

QUERY = "model.layers.17.self_attn.q_proj"
DOWN = "model.layers.17.mlp.down_proj"
RANKS = {QUERY: 4, DOWN: 16}
CONDUCTOR = {"prompt": "compact", "max_new_tokens": 34, "env": "Conductor-RG-v0"}
LOGIT_TOLERANCE = 1e-2


def _logits(model, input_ids):
    with torch.inference_mode():
        return model(input_ids=input_ids).logits.float()


def _add_low_rank_delta(model, module_path: str, rank: int, seed: int) -> None:
    weight = model.get_submodule(module_path).weight
    generator = torch.Generator().manual_seed(seed)
    b = torch.randn(weight.shape[0], rank, generator=generator) * 0.05
    a = torch.randn(rank, weight.shape[1], generator=generator) * 0.05
    with torch.no_grad():
        weight += b @ a


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A saved "trained" model folder, a prompt, and the trained and base models' logits on it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base_dir = resolve_model("gemma3-270m")
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    text = tokenizer.apply_chat_template([{"role": "user", "content": "Which expert solves 17 * 23?"}], tokenize=False, add_generation_prompt=True)
    input_ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    base_logits = _logits(model, input_ids)
    for seed, (module_path, rank) in enumerate(RANKS.items()):
        _add_low_rank_delta(model, module_path, rank, seed)
    folder = tmp_path_factory.mktemp("trained") / "final"
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    (folder / "conductor.json").write_text(json.dumps(CONDUCTOR), encoding="utf-8")
    return {"dir": folder, "input_ids": input_ids, "logits": _logits(model, input_ids), "base_logits": base_logits}


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    out = tmp_path_factory.mktemp("adapter") / "conductor"
    return export_adapter(trained["dir"], out), out


def test_export_finds_the_ranks_and_writes_a_small_peft_adapter(exported):
    report, out = exported
    assert isinstance(report, AdapterReport)
    assert report.ranks == RANKS
    assert report.modules == sorted(RANKS)
    assert report.bytes_written == sum(f.stat().st_size for f in out.iterdir())
    assert report.bytes_written < 20_000_000
    assert report.max_abs_error < 1e-3
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["task_type"] == "CAUSAL_LM"
    assert (config["r"], config["lora_alpha"]) == (16, 16)
    assert sorted(config["target_modules"]) == sorted(RANKS)
    assert config["rank_pattern"] == {QUERY: 4} and config["alpha_pattern"] == {QUERY: 4}
    assert config["base_model_name_or_path"] == "gemma3-270m"
    with safe_open(str(out / "adapter_model.safetensors"), framework="pt") as handle:
        keys = set(handle.keys())
        assert handle.get_tensor(f"base_model.model.{DOWN}.lora_B.weight").dtype == torch.float16
    assert keys == {f"base_model.model.{m}.lora_{x}.weight" for m in RANKS for x in "AB"}
    assert json.loads((out / "conductor.json").read_text()) == {**CONDUCTOR, "base_model": "gemma3-270m"}
    assert trained_conductor_config(str(out))["prompt"] == "compact"  # llm:<adapter folder> prompts as trained


def test_the_local_backend_loads_the_adapter_like_the_trained_model(trained, exported):
    _, out = exported
    engine = LocalEngine(str(out), device="cpu", dtype="float32")
    engine._load()  # the local backend's own loading path
    assert engine._tokenizer.chat_template is not None  # the base's tokenizer
    logits = _logits(engine._model, trained["input_ids"])
    adapter_gap = float((logits - trained["logits"]).abs().max())
    base_gap = float((trained["base_logits"] - trained["logits"]).abs().max())
    assert adapter_gap < LOGIT_TOLERANCE
    assert base_gap > 100 * LOGIT_TOLERANCE  # the comparison can fail: without the adapter it would


def test_a_changed_embedding_is_refused_by_name(trained, tmp_path):
    state = load_file(str(trained["dir"] / "model.safetensors"))
    state["model.embed_tokens.weight"][0] += 1.0
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    save_file(state, str(hostile / "model.safetensors"), metadata={"format": "pt"})
    del state
    with pytest.raises(ValueError, match="model.embed_tokens.weight"):
        export_adapter(hostile, tmp_path / "out")


def test_a_rank_above_max_rank_is_refused(trained, tmp_path):
    with pytest.raises(ValueError, match=rf"{DOWN}.weight .* rank 16.*--max-rank 8"):
        export_adapter(trained["dir"], tmp_path / "out", max_rank=8)


def test_truncate_keeps_the_largest_directions_and_says_what_it_cut(trained, tmp_path):
    report = export_adapter(trained["dir"], tmp_path / "out", max_rank=8, truncate=True)
    assert report.ranks == {QUERY: 4, DOWN: 8}
    assert set(report.truncated) == {DOWN}  # the rank-4 module fits and is not reported as cut
    assert 0.05 < report.truncated[DOWN] < 1.0  # half of 16 random directions carry a real share
    assert "TRUNCATED 1 modules" in report.summary()
    exact = export_adapter(trained["dir"], tmp_path / "exact", max_rank=16, truncate=True)
    assert exact.truncated == {} and "TRUNCATED" not in exact.summary()


def test_missing_or_non_model_folders_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_adapter(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a model folder"):
        export_adapter(tmp_path / "empty", tmp_path / "out")


@pytest.mark.parametrize("case", ["missing", "rank"])
def test_the_cli_reports_an_error_in_one_line(case, trained, tmp_path, capsys):
    model_dir = tmp_path / "missing" if case == "missing" else trained["dir"]
    status = main(["train", "export-adapter", str(model_dir), "--out", str(tmp_path / "out"), "--max-rank", "8"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert ("does not exist" if case == "missing" else "max-rank 8") in err


def test_the_cli_re_exports_over_an_earlier_adapter_and_prints_the_report(trained, exported, tmp_path, capsys):
    out = tmp_path / "adapter"
    shutil.copytree(exported[1], out)
    (out / "README.md").write_text("Our trained Conductor.\n")
    assert main(["train", "export-adapter", str(trained["dir"]), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert "2 modules, rank 4-16" in lines[0] and f"llm:{out}" in lines[1]
    assert sorted(f.name for f in out.iterdir()) == ["README.md", "adapter_config.json", "adapter_model.safetensors", "conductor.json"]
    assert (out / "README.md").read_text() == "Our trained Conductor.\n"

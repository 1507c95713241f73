"""The offline local model: export from the PyPI GGUF, the cache, and `conductor-env models`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conductor_env.workers.local_models import (
    EXPORT_MARKER,
    ModelExportError,
    cache_dir,
    cached_model_path,
    ensure_model,
    export_model,
    is_exported,
    resolve_model,
)

# Runs the real `conductor-env` entry point.
CLI = "import sys\nfrom conductor_env.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CONDUCTOR_ENV_CACHE", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    assert cached_model_path() == tmp_path / "explicit" / "models" / "gemma3-270m"
    monkeypatch.delenv("CONDUCTOR_ENV_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "conductor-env"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "conductor-env"


def test_bad_names_and_folders_are_clear_errors(tmp_path) -> None:
    with pytest.raises(ModelExportError, match="known models"):
        ensure_model("gpt-9")
    with pytest.raises(ModelExportError, match="neither a known name"):
        resolve_model(str(tmp_path / "missing"))
    assert resolve_model(str(tmp_path)) == tmp_path  # any folder is taken as a model folder
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ModelExportError, match="not empty"):
        export_model("gemma3-270m", occupied)
    assert (occupied / "notes.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.slow
def test_exported_model_loads_fast_with_a_chat_template() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = ensure_model()
    assert is_exported(path) and (path / "model.safetensors").is_file()
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    assert end_of_turn in json.loads((path / "generation_config.json").read_text())["eos_token_id"]
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    model = AutoModelForCausalLM.from_pretrained(str(path))
    assert type(model).__name__ == "Gemma3ForCausalLM" and model.config.vocab_size == 262144


@pytest.mark.slow
def test_cli_prints_the_folder_and_refuses_a_foreign_one(tmp_path) -> None:
    path = ensure_model()
    done = _cli("models", "export", "gemma3-270m", str(path))  # already this export: nothing to do
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert out.strip() == str(path)
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    refused = _cli("models", "export", "gemma3-270m", str(tmp_path))
    out, err = refused.communicate(timeout=120)
    assert refused.returncode == 2 and "not empty" in err and out == ""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_processes_racing_to_export_share_one_complete_export(tmp_path) -> None:
    env = {"CONDUCTOR_ENV_CACHE": str(tmp_path / "cache")}
    first = _cli("models", "export", "gemma3-270m", env=env)
    time.sleep(1.0)
    second = _cli("models", "export", "gemma3-270m", env=env)
    results = [process.communicate(timeout=840) for process in (first, second)]
    for process, (out, err) in zip((first, second), results):
        assert process.returncode == 0, err[-2000:]
    expected = tmp_path / "cache" / "models" / "gemma3-270m"
    assert [out.strip() for out, _ in results] == [str(expected)] * 2
    assert is_exported(expected) and json.loads((expected / EXPORT_MARKER).read_text())["name"] == "gemma3-270m"
    # One export happened (the second process waited for it) and no staging folder is left.
    assert sorted(p.name for p in expected.parent.iterdir()) == [".gemma3-270m.lock", "gemma3-270m"]
    assert not (expected / "model.gguf").exists()
    assert sum("exporting gemma3-270m to" in err for _, err in results) == 1

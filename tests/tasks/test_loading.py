"""Dataset loading: local files in every supported format, and fast, clear hub failures."""

from __future__ import annotations

import csv
import gzip
import json
import socket
from pathlib import Path

import pytest

from conductor_env.tasks import loading
from conductor_env.tasks.loading import load_rows
from conductor_env.tasks.registry import SuiteError

ROWS = [
    {"problem": "What is $1+1$?", "answer": "2", "level": 1},
    {"problem": "What is $2 \\cdot 3$?", "answer": "006", "level": 2},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_jsonl_keeps_values_exactly(tmp_path: Path) -> None:
    mixed = ROWS + [{"problem": "p", "answer": 25, "level": 3}]  # "006" and 25: no type unification
    rows = load_rows("x/y", data_files=write_jsonl(tmp_path / "rows.jsonl", mixed))
    assert rows == mixed


def test_jsonl_gz_json_csv_parquet(tmp_path: Path) -> None:
    gz = tmp_path / "rows.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in ROWS)
    assert load_rows("x/y", data_files=str(gz)) == ROWS

    array = tmp_path / "rows.json"
    array.write_text(json.dumps(ROWS))
    assert load_rows("x/y", data_files=array) == ROWS

    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"data": ROWS}))
    assert load_rows("x/y", data_files=wrapped) == ROWS

    table = tmp_path / "rows.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["problem", "answer", "level"])
        writer.writeheader()
        writer.writerows(ROWS)
    assert load_rows("x/y", data_files=table) == [{k: str(v) for k, v in row.items()} for row in ROWS]

    import pyarrow
    import pyarrow.parquet

    parquet = tmp_path / "rows.parquet"
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(ROWS), parquet)
    assert load_rows("x/y", data_files=parquet) == ROWS


def test_several_files_globs_and_split_mapping(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "part-0.jsonl", ROWS[:1])
    write_jsonl(tmp_path / "part-1.jsonl", ROWS[1:])
    assert load_rows("x/y", data_files=str(tmp_path / "part-*.jsonl")) == ROWS
    assert load_rows("x/y", data_files=[tmp_path / "part-1.jsonl", tmp_path / "part-0.jsonl"]) == ROWS[::-1]
    by_split = {"train": tmp_path / "part-0.jsonl", "test": tmp_path / "part-1.jsonl"}
    assert load_rows("x/y", split="train", data_files=by_split) == ROWS[:1]
    with pytest.raises(SuiteError, match="no split 'validation'"):
        load_rows("x/y", split="validation", data_files=by_split)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"not found: .*nope\.jsonl"):
        load_rows("HuggingFaceH4/MATH-500", data_files=tmp_path / "nope.jsonl")
    with pytest.raises(SuiteError, match="not found"):
        load_rows("x/y", data_files=str(tmp_path / "none-*.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(SuiteError, match=r"bad\.jsonl:2: not valid JSON"):
        load_rows("x/y", data_files=bad)
    odd = tmp_path / "rows.xlsx"
    odd.write_text("x")
    with pytest.raises(SuiteError, match="unknown format"):
        load_rows("x/y", data_files=odd)


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(autouse=True)
def loopback_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Points the hub at a closed loopback port so no test ever reaches another address."""
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_loopback_port()}")
    monkeypatch.setattr(loading, "_probe_cache", {})


def test_offline_hub_fails_fast_with_guidance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SuiteError) as raised:
        load_rows("cais/mmlu", config="all", env_id="Conductor-MMLU-v0")
    message = str(raised.value)
    assert "cais/mmlu" in message
    assert "data_files" in message and "HF_HUB_OFFLINE" in message
    assert 'gym.make("Conductor-MMLU-v0"' in message


def test_unreachable_hub_is_probed_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    # The endpoint is a loopback port nobody listens on: the probe fails at once and
    # datasets (which would retry for ~30 s) is never called.
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(SuiteError) as raised:
        load_rows("Idavidrein/gpqa", config="gpqa_diamond", split="train", gated=True)
    message = str(raised.value)
    assert "Idavidrein/gpqa" in message and "unreachable" in message
    assert "data_files" in message and "HF_HUB_OFFLINE" in message
    assert "huggingface-cli login" in message and "HF_TOKEN" in message


def test_unicode_line_separators_inside_strings(tmp_path: Path) -> None:
    # U+2028 and U+0085 are line breaks to str.splitlines() but ordinary characters in JSON.
    rows = [{"question": "first\u2028part\x85two", "answer": 1}, {"question": "next", "answer": 2}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    assert load_rows("x/y", data_files=path) == rows

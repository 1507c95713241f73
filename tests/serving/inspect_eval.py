"""Runs Inspect (inspect-ai) against a served Conductor; executed by the inspect virtualenv's Python.

Usage: python inspect_eval.py BASE_URL LOG_DIR QUESTIONS_JSON EXPECTED_ANSWER

A handful of questions, Inspect's plain ``generate()`` solver and ``exact()`` scorer against the
answer the served system is known to give; prints the eval log's summary as one JSON line.
"""

from __future__ import annotations

import json
import sys

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import exact
from inspect_ai.solver import generate


def main(base_url: str, log_dir: str, questions: list[str], expected: str) -> None:
    task = Task(dataset=MemoryDataset([Sample(input=q, target=expected, id=i) for i, q in enumerate(questions)]), solver=generate(), scorer=exact())
    (log,) = eval(task, model="openai-api/conductor/conductor", model_base_url=base_url, log_dir=log_dir, display="none", max_connections=4, fail_on_error=False)
    samples = log.samples or []
    summary = {
        "status": log.status,
        "error": str(log.error) if log.error else None,
        "completions": [s.output.completion for s in samples],
        "scores": [s.scores["exact"].value for s in samples if s.scores],
        "metrics": {name: m.value for name, m in log.results.scores[0].metrics.items()} if log.results and log.results.scores else {},
        "input_tokens": sum(u.input_tokens for u in log.stats.model_usage.values()),
        "output_tokens": sum(u.output_tokens for u in log.stats.model_usage.values()),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])

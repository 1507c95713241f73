"""API-token estimates for the paper's runs, from the package's own accounting on a replayed run.

No recording of the paper's real workers ships with the package (their calls cost money and need
API keys), so this script makes one with stand-ins and replays it, through the same path a real
recording takes:

1. It writes a pool file whose seven workers have the ``paper`` preset's ids, models, output
   limits, temperatures and prices, on the ``replay`` backend with ``fallthrough`` set to a
   ``simulated`` worker: every call misses the (empty) recording, goes to the simulated worker
   and is appended to ``recording.jsonl`` (``record_fallthrough`` defaults to true).
2. It runs ``conductor-env eval`` with that pool on ``--n`` problems of each benchmark, then
   again with ``fallthrough = false`` (pure replay, a miss would be an infrastructure error) into
   a fresh folder, and checks that the replayed ``tokens``/``cost_usd`` equal the recorded ones.
3. It reads the replayed ``results.jsonl``: worker calls, the steps each call could read, and the
   ``tokens``/``cost_usd``/``conductor_tokens`` of each episode, and the Conductor prompt of the
   same problems from the env itself.

With ``--recording FILE --pool-file POOL.toml`` it skips step 1 and replays your own recording
(e.g. made with the paper pool's workers wrapped as ``replay`` workers whose ``fallthrough`` is
the live backend): then the figures are real token counts.

What the simulated stand-ins measure, and why that is only a LOWER bound:
- ``prompt_tokens`` of a simulated call is the number of whitespace-separated *words* of the
  message the worker received (the package's worker message: preamble, the real question, the
  subtask, the visible earlier steps). Tokenizers give more tokens than words (about 1.3 for
  English prose, more for LaTeX and code); the script reports the ratio on each benchmark's
  questions with the Gemma 3 tokenizer when the local model's ``tokenizer.json`` is present.
- ``completion_tokens`` is the word count of a canned correct-or-wrong answer (a boxed value, a
  letter, a program), not of a real response: real workers write reasoning (and GPT-5, Gemini
  and Qwen3-thinking spend hidden reasoning tokens), up to each worker's ``max_tokens``.
- A later step that reads earlier steps (``"all"`` access) receives their *responses* as input;
  with real responses that input grows by up to ``max_tokens`` per visible step.
So the script also reports a CEILING per episode: input words x tokenizer ratio, plus
``max_tokens`` for every visible earlier step, plus ``max_tokens`` of output per call, for the
``paper`` (4096) and ``unconstrained`` (65536; Claude 64000) limits. Real runs fall in between.

Usage:
    python experiments/estimate_tokens.py [--data /work/shared/data] [--n 5] \
        [--json /tmp/estimate_tokens.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import conductor_env  # noqa: F401
from conductor_env.workers.pool import load_pool

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("conductor-env"))

#: Policies replayed on every benchmark. plan-solve-verify (3 steps, the later two reading all
#: earlier steps) stands in for the trained Conductor, whose plans average about 3 steps
#: (PAPER.md); the others are the paper's baselines.
POLICIES = ["template:plan-solve-verify", "single:2", "moa:7", "reflect:2:5"]
#: moa:7 (8 calls) needs max_steps >= 8; worker messages do not show max_steps.
ENV_OPTIONS = {"max_steps": 8}

#: name -> (gym id, suite options with data files relative to --data, split or None,
#:          problems in the paper's run of that row, what that count is)
ROWS: dict[str, tuple[str, dict[str, Any], str | None, int, str]] = {
    "MATH500": ("Conductor-MATH500-v0", {"data_files": "math500.jsonl"}, "test", 500, "MATH-500, all 500"),
    "AIME25": ("Conductor-AIME-v0", {"data_files": "aime25.jsonl", "year": 2025}, None, 30, "AIME 2025 I+II"),
    "GPQA-Diamond": ("Conductor-GPQA-v0", {"data_files": "gpqa_diamond.jsonl"}, None, 198, "GPQA-Diamond"),
    "LCB": (
        "Conductor-LCB-v0",
        {"data_files": "lcb_release_v1_public_only.jsonl"},
        None,
        175,
        "LCB v6 shard (release_v6 minus release_v5); release_v6 whole is 1055",
    ),
    "BigCodeBench": (
        "Conductor-BigCodeBench-v0",
        {"data_files": "bigcodebench_v0.1.0_hf.jsonl.gz", "prompt": "instruct"},
        None,
        1140,
        "BigCodeBench full (hard subset: 148)",
    ),
    "Mix-train": (
        "Conductor-Mix-v0",
        {
            "data_files": {"math500": "math500.jsonl", "mmlu": "mmlu_test_full.jsonl", "lcb": "lcb_release_v1_public_only.jsonl"},
            "recipe": "paper",
            "allow_public_only": True,
        },
        "train",
        51200,
        "GRPO: 200 steps x 4 questions x 64 samples (episodes, not problems)",
    ),
}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def write_pool(path: Path, recording: Path, *, record: bool) -> None:
    """Writes the paper pool as replay workers (recording through a simulated fallthrough)."""
    lines = ['name = "paper-replay"', ""]
    for spec in load_pool("paper").specs:
        lines += [
            "[[workers]]",
            f"id = {_toml_value(spec.name)}",
            'backend = "replay"',
            f"model = {_toml_value(spec.model)}",
            f"max_tokens = {spec.max_tokens}",
            f"temperature = {spec.temperature}",
            f"price_in_per_m = {spec.price_in_per_m}",
            f"price_out_per_m = {spec.price_out_per_m}",
            "max_concurrency = 16",
            f"path = {_toml_value(str(recording))}",
            'fallthrough = { backend = "simulated", skill = 0.6 }' if record else "fallthrough = false",
            "",
        ]
    path.write_text("\n".join(lines))


def _resolve(options: dict[str, Any], data: Path) -> dict[str, Any]:
    files = options.get("data_files")
    out = dict(options)
    if isinstance(files, str):
        out["data_files"] = str(data / files)
    elif isinstance(files, dict):
        out["data_files"] = {k: str(data / v) for k, v in files.items()}
    return out


def run_eval(env_id: str, pool: Path, suite_options: dict[str, Any], split: str | None, n: int, out: Path) -> list[dict[str, Any]]:
    """Runs `conductor-env eval` and returns its records."""
    cmd = [CLI, "eval", "--env", env_id, "--pool", str(pool), "--n", str(n), "--out", str(out), "--sandbox", "local"]
    for policy in POLICIES:
        cmd += ["--policy", policy]
    if split:
        cmd += ["--split", split]
    for key, value in suite_options.items():
        cmd += ["--suite-option", f"{key}={json.dumps(value) if not isinstance(value, str) else value}"]
    for key, value in ENV_OPTIONS.items():
        cmd += ["--env-option", f"{key}={json.dumps(value)}"]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"eval failed ({done.returncode}):\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}")
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def _steps(record: dict[str, Any]) -> list[dict[str, Any]]:
    steps = list(record.get("trace") or [])
    for frame in record.get("frames") or []:
        steps += list(frame.get("trace") or [])
    for earlier in record.get("earlier_rounds") or []:
        steps += list(earlier.get("trace") or [])
    return steps


def _tokenizer():
    path = Path.home() / ".cache/conductor-env/models/gemma3-270m/tokenizer.json"
    if not path.exists():
        return None
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def _ratio(tokenizer, texts: list[str]) -> float | None:
    words = sum(len(t.split()) for t in texts)
    if tokenizer is None or not words:
        return None
    return sum(len(tokenizer.encode(t, add_special_tokens=False).ids) for t in texts) / words


def _other_ratio(tokenizer, prompts: list[str], questions: list[str]) -> float | None:
    """Tokens per word of the Conductor prompts' text around the question."""
    if tokenizer is None or not prompts:
        return None

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    words = sum(len(p.split()) for p in prompts) - sum(len(q.split()) for q in questions)
    tokens = sum(count(p) for p in prompts) - sum(count(q) for q in questions)
    return tokens / words if words > 0 else None


def conductor_prompts(env_id: str, suite_options: dict[str, Any], split: str | None, n: int) -> list[tuple[str, str]]:
    """(Conductor prompt, question) of n episodes (paper pool shown, default env options)."""
    kwargs: dict[str, Any] = {"pool": "paper", "suite_options": suite_options}
    if split:
        kwargs["split"] = split
    env = gym.make(env_id, **kwargs)
    prompts = []
    try:
        for seed in range(n):
            observation, _ = env.reset(seed=seed)
            prompts.append((observation["prompt"], observation["question"]))
    finally:
        env.close()
    return prompts


def summarise(records: list[dict[str, Any]], caps: dict[str, dict[str, int]], ratio: float, other_ratio: float) -> dict[str, Any]:
    """Per-policy means per episode: measured (words) and the ceilings per pool's limits.

    Input words become tokens at ``ratio`` for the question's words (each call carries the
    question once) and at ``other_ratio`` for the rest (preamble, subtask, earlier steps).
    """
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_policy.setdefault(record["policy"], []).append(record)
    out: dict[str, Any] = {}
    for policy, rows in by_policy.items():
        calls, words_in, words_out, tokens, usd, conductor, est_in = [], [], [], [], [], [], []
        ceilings: dict[str, list[float]] = {name: [] for name in caps}
        for record in rows:
            steps = [s for s in _steps(record) if s.get("worker_name")]
            calls.append(len(steps))
            words_in.append(sum(s.get("prompt_tokens") or 0 for s in steps))
            words_out.append(sum(s.get("completion_tokens") or 0 for s in steps))
            tokens.append(record.get("tokens") or 0)
            usd.append(record.get("cost_usd") or 0.0)
            conductor.append(record.get("conductor_tokens") or 0)
            question_words = len(str(record.get("question") or "").split()) * len(steps)
            base_in = question_words * ratio + max(0, words_in[-1] - question_words) * other_ratio
            est_in.append(base_in)
            for name, cap in caps.items():
                read = sum(len(s.get("visible") or []) * cap[s["worker_name"]] for s in steps)
                written = sum(cap[s["worker_name"]] for s in steps)
                ceilings[name].append(base_in + read + written)
        out[policy] = {
            "episodes": len(rows),
            "infra_errors": sum(1 for r in rows if r.get("infra_error")),
            "worker_calls": statistics.fmean(calls),
            "measured_tokens": statistics.fmean(tokens),
            "measured_input_words": statistics.fmean(words_in),
            "measured_output_words": statistics.fmean(words_out),
            "measured_usd": statistics.fmean(usd),
            "conductor_tokens": statistics.fmean(conductor),
            "input_tokens_est": statistics.fmean(est_in),
            "ceiling_tokens": {name: statistics.fmean(values) for name, values in ceilings.items()},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"), help="folder of the benchmark rows")
    parser.add_argument("--n", type=int, default=5, help="problems per benchmark and policy")
    parser.add_argument("--rows", nargs="*", default=list(ROWS), help=f"rows to run (default all: {', '.join(ROWS)})")
    parser.add_argument("--recording", type=Path, help="replay this recording instead of making one (needs --pool-file)")
    parser.add_argument("--pool-file", type=Path, help="the replay pool file of --recording")
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "conductor-env-experiments" / "estimate_tokens.json")
    args = parser.parse_args()

    caps = {name: {spec.name: int(spec.max_tokens) for spec in load_pool(name).specs} for name in ("paper", "unconstrained")}
    tokenizer = _tokenizer()
    work = Path(tempfile.mkdtemp(prefix="estimate_tokens_"))
    recording = args.recording or work / "recording.jsonl"
    record_pool_file, replay_pool_file = work / "record.toml", args.pool_file or work / "replay.toml"
    if args.recording is None:
        write_pool(record_pool_file, recording, record=True)
        write_pool(replay_pool_file, recording, record=False)
    results: dict[str, Any] = {
        "what": "per-episode worker token accounting of a replayed run (stand-in simulated completions: a lower bound)",
        "command": "python experiments/estimate_tokens.py " + " ".join(sys.argv[1:]),
        "n_per_row": args.n,
        "policies": POLICIES,
        "env_options": ENV_OPTIONS,
        "tokenizer": "gemma3-270m tokenizer.json" if tokenizer else None,
        "rows": {},
    }
    for name in args.rows:
        env_id, options, split, paper_n, paper_what = ROWS[name]
        suite_options = _resolve(options, args.data)
        started = time.perf_counter()
        if args.recording is None:
            recorded = run_eval(env_id, record_pool_file, suite_options, split, args.n, work / f"{name}-record")
        replayed = run_eval(env_id, replay_pool_file, suite_options, split, args.n, work / f"{name}-replay")
        if args.recording is None:

            def key(r: dict) -> tuple:
                return (r["policy"], r["problem_index"], r["sample"])

            live = {key(r): (r["tokens"], round(r["cost_usd"], 12)) for r in recorded}
            again = {key(r): (r["tokens"], round(r["cost_usd"], 12)) for r in replayed}
            if live != again:
                raise SystemExit(f"{name}: the replay differs from the recorded run")
        pairs = conductor_prompts(env_id, suite_options, split, args.n)
        prompts, prompt_questions = [p for p, _ in pairs], [q for _, q in pairs]
        questions = [r["question"] for r in replayed if r["policy"] == POLICIES[0]]
        ratio = _ratio(tokenizer, questions) or 1.3
        conductor_ratio = _ratio(tokenizer, prompts) or 1.3
        # the prompts' words other than the question (instructions, examples, pool): English prose
        other_ratio = _other_ratio(tokenizer, prompts, prompt_questions) or 1.3
        results["rows"][name] = {
            "env_id": env_id,
            "split": split,
            "paper_problems": paper_n,
            "paper_problems_what": paper_what,
            "tokens_per_word_questions": ratio,
            "tokens_per_word_other": other_ratio,
            "conductor_prompt_words": statistics.fmean(len(p.split()) for p in prompts),
            "conductor_prompt_tokens_est": statistics.fmean(len(p.split()) for p in prompts) * conductor_ratio,
            "replay_identical_to_recording": args.recording is None,
            "seconds": time.perf_counter() - started,
            "policies": summarise(replayed, caps, ratio, other_ratio),
        }
        print(f"{name}: {json.dumps(results['rows'][name]['policies'][POLICIES[0]], default=str)}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.json} (work folder {work})")


if __name__ == "__main__":
    main()

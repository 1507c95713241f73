"""Cost of bounded math-verify grading against calling math-verify directly, in one run.

math-verify's own deadline (``signal.alarm``) works only on the main thread, so the math suites
run it timeout-free in persistent child processes with a deadline per comparison
(``conductor_env.tasks.math_equivalence``). This measures, per comparison of MATH-500 gold
answers with a correct (gold) and a wrong (``-7/13``) candidate:

  (a) baseline: ``verify(parse(gold), parse(answer))`` in this process, main thread, with
      math-verify's default signal timeouts (what a single-threaded script would do);
  (b) ours, cache miss: a round trip to a warm child process;
  (c) ours, cache hit: the same pair again (GRPO groups repeat answers);
  (d) the alternative we did not take: a fresh subprocess per comparison (a sample of them);
  (e) ours from 4 threads at once (2 children), as the env's ``averify`` calls it.

Ratios are against (a). Usage: python benchmarks/bench_math_verify.py [--rows 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor_env.tasks.math_equivalence import MathEquivalence

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
FIXTURE = HERE.parent / "tests" / "fixtures" / "suites" / "math500.jsonl"
WRONG = "-\\frac{7}{13}"


def gold_answers(rows: int) -> tuple[list[str], str]:
    path = SHARED / "math500.jsonl" if (SHARED / "math500.jsonl").is_file() else FIXTURE
    answers = [json.loads(line)["answer"] for line in path.read_text().split("\n") if line.strip()]
    return answers[:rows], str(path)


def pairs_of(golds: list[str]) -> list[tuple[str, str]]:
    return [(gold, gold) for gold in golds] + [(gold, WRONG) for gold in golds]


def time_direct(pairs: list[tuple[str, str]]) -> float:
    from math_verify import parse, verify

    verify(parse("\\boxed{1}"), parse("\\boxed{1}"))  # imports and caches outside the clock
    start = time.perf_counter()
    for gold, answer in pairs:
        verify(parse(f"\\boxed{{{gold}}}"), parse(f"\\boxed{{{answer}}}"))
    return (time.perf_counter() - start) / len(pairs)


def time_ours(pairs: list[tuple[str, str]]) -> tuple[float, float]:
    equivalence = MathEquivalence(processes=1)
    equivalence.compare("1", "1")  # start the child outside the clock
    start = time.perf_counter()
    for gold, answer in pairs:
        equivalence.compare(gold, answer)
    miss = (time.perf_counter() - start) / len(pairs)
    start = time.perf_counter()
    for gold, answer in pairs:
        equivalence.compare(gold, answer)
    hit = (time.perf_counter() - start) / len(pairs)
    equivalence.close()
    return miss, hit


def time_threads(pairs: list[tuple[str, str]]) -> float:
    equivalence = MathEquivalence(processes=2)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda _: equivalence.compare("1", "1"), range(4)))  # start both children
        start = time.perf_counter()
        list(pool.map(lambda pair: equivalence.compare(*pair), pairs))
        elapsed = (time.perf_counter() - start) / len(pairs)
    equivalence.close()
    return elapsed


def time_subprocess_each(pairs: list[tuple[str, str]], sample: int) -> float:
    code = "import sys, json\nfrom math_verify import parse, verify\ng, a = json.loads(sys.argv[1])\nprint(verify(parse('\\\\boxed{'+g+'}'), parse('\\\\boxed{'+a+'}')))"
    chosen = pairs[:sample]
    start = time.perf_counter()
    for pair in chosen:
        subprocess.run([sys.executable, "-c", code, json.dumps(pair)], check=True, capture_output=True)
    return (time.perf_counter() - start) / len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200, help="MATH-500 gold answers to use")
    parser.add_argument("--subprocess-sample", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    golds, source = gold_answers(args.rows)
    pairs = pairs_of(golds)
    direct = time_direct(pairs)
    miss, hit = time_ours(pairs)
    threads = time_threads(pairs)
    each = time_subprocess_each(pairs, args.subprocess_sample)
    figures = {
        "data": source,
        "comparisons": len(pairs),
        "direct_ms": direct * 1e3,
        "ours_miss_ms": miss * 1e3,
        "ours_hit_ms": hit * 1e3,
        "ours_4_threads_ms": threads * 1e3,
        "subprocess_each_ms": each * 1e3,
        "ours_miss_over_direct": miss / direct,
        "ours_hit_over_direct": hit / direct,
        "ours_4_threads_over_direct": threads / direct,
        "subprocess_each_over_direct": each / direct,
    }
    print(f"data: {source} ({len(pairs)} comparisons: each gold vs itself and vs {WRONG})")
    print(f"(a) direct math-verify, main thread      {direct * 1e3:8.2f} ms/comparison  (baseline)")
    print(f"(b) ours, child process, cache miss      {miss * 1e3:8.2f} ms  x{miss / direct:.2f}")
    print(f"(c) ours, cache hit                      {hit * 1e3:8.3f} ms  x{hit / direct:.3f}")
    print(f"(e) ours, 4 threads over 2 children      {threads * 1e3:8.2f} ms  x{threads / direct:.2f} (wall per comparison)")
    print(f"(d) a fresh subprocess per comparison    {each * 1e3:8.1f} ms  x{each / direct:.1f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

"""Parsing untrusted text in linear time: adversarial inputs against ordinary ones of the same size.

The workflow parser reads every action a Conductor writes, and the answer extractors read every
worker response; both run on the env's event loop, so one slow input stalls every episode on it.
This times, at 16, 64 and 256 KiB:

  (a) ``parse_workflow`` on adversarial families of actions (unclosed labels, unclosed think
      tags, labels inside unclosed strings, strings full of escapes, deep brackets, thousands of
      lists, ...), with the length limit lifted (``max_chars=None``) so that 256 KiB is scanned
      too; the env's default limit refuses actions over 64 KiB unread (``too_long``);
  (b) the answer extractors (``extract_boxed``, ``extract_choice``, ``extract_code``, the
      reasoning-gym ``final_answer``, RLPR's tagged answer and number match) on adversarial
      responses (unclosed think tags, nested and unclosed boxes, ``Answer:`` runs, fence lines of
      spaces or tildes, unclosed ``<answer>`` tags, long digit runs, ...).

Each figure is the best of a few runs, per KiB, and its ratio to the ordinary input of the same
size timed in the same run (an action: prose reasoning, then the three lists; a response: prose
reasoning, then the final answer). Linear time shows as ratios that stay flat from 16 to 256 KiB.

Usage: python benchmarks/bench_parse.py [--sizes 16 64 256] [--json benchmarks/results/parse.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Callable

from conductor_env.tasks.extract import extract_boxed, extract_choice, extract_code
from conductor_env.tasks.suites.procedural import final_answer
from conductor_env.tasks.suites.rlpr import extract_tagged_answer, rlpr_match
from conductor_env.workflow import MAX_ACTION_CHARS, WorkflowError, parse_workflow

KIB = 1024
WORKFLOW = 'model_id = [1, 0, 2]\nsubtasks = ["Plan it.", "Solve it.", "Check it."]\naccess_list = [[], "all", "all"]'
REASONING = "Let's weigh the pool: the planner's notes (step 1) feed the \"solver\", and model 2 checks the result against the statement's examples [1, 2, 3]; it's cheap, so use it last.\n"
RESPONSE_REASONING = "We compute $x^2 + 2x + 1 = (x+1)^2$, so the roots are equal; checking option (B) against the others, only it's consistent with the constraint that x > 0.\n"
RESPONSE_END = "\n```python\nprint(42)\n```\nSo the result is \\boxed{42}.\n<answer>42</answer>\nAnswer: B"


def repeat(unit: str, size: int, tail: str = "") -> str:
    """``unit`` repeated to exactly ``size`` characters, ending with ``tail``."""
    body = size - len(tail)
    return (unit * (body // len(unit) + 1))[:body] + tail


def half(size: int, used: int = 0) -> int:
    return (size - used) // 2


def pad(text: str, size: int) -> str:
    """``text`` after enough spaces to make ``size`` characters."""
    return " " * (size - len(text)) + text


#: Actions: (family, builder). The first is the ordinary baseline.
ACTIONS: list[tuple[str, Callable[[int], str]]] = [
    ("ordinary: reasoning, then the lists", lambda n: repeat(REASONING, n, "\n" + WORKFLOW)),
    ("unclosed `model_id = [` labels", lambda n: repeat("model_id = [", n)),
    ("unclosed `<think>` tags, then the lists", lambda n: repeat("<think> hmm ", n, "\n" + WORKFLOW)),
    ("labels inside an unclosed string", lambda n: repeat("subtasks = ['", n)),
    ("strings full of escapes", lambda n: repeat('subtasks = ["\\"\\\\ ', n)),
    ("deep brackets, closed", lambda n: pad("model_id = " + "[" * half(n, 11) + "]" * half(n, 11), n)),
    ("deep brackets, unclosed", lambda n: "model_id = " + "[" * (n - 11)),
    ("thousands of lists", lambda n: repeat("model_id=[0]\n", n)),
    ("one list of commas", lambda n: "model_id = [" + "," * (n - 13) + "]"),
    ("quotes and escapes across labels", lambda n: repeat("x' model_id = [ \"a\\' ", n)),
    ("fences, bullets and backticks", lambda n: repeat("```\n- * `` ", n)),
    ("a label, then whitespace", lambda n: "model_id" + " " * (n - 9) + "x"),
]

#: Responses: (family, builder). The first is the ordinary baseline.
RESPONSES: list[tuple[str, Callable[[int], str]]] = [
    ("ordinary: reasoning, then the answer", lambda n: repeat(RESPONSE_REASONING, n, RESPONSE_END)),
    ("unclosed `<think>` tags", lambda n: repeat("<think> hmm ", n)),
    ("boxes nested in boxes", lambda n: pad("\\boxed{" * ((n - 1) // 8) + "A" + "}" * ((n - 1) // 8), n)),
    ("unclosed `\\boxed{`", lambda n: repeat("\\boxed{", n)),
    ("`Answer:` markers", lambda n: repeat("Answer: ", n)),
    ("unclosed `<answer>` tags", lambda n: repeat("<answer>", n)),
    ("a fence line of spaces", lambda n: "```" + " " * (n - 4) + "`"),
    ("a fence line of tildes", lambda n: "~" * (n - 1) + "`"),
    ("thousands of fences", lambda n: repeat("```python\n", n)),
    ("a digit run in <answer>", lambda n: "<answer>" + "1" * (n - 18) + "!</answer>"),
    ("articles and spaces", lambda n: repeat("A" + " " * 50, n)),
    ("open parentheses", lambda n: "(" * n),
]


def parse(text: str) -> None:
    try:
        parse_workflow(text, num_workers=4, max_chars=None)
    except WorkflowError:
        pass


def refuse(text: str) -> None:
    try:
        parse_workflow(text, num_workers=4)
    except WorkflowError as error:
        assert error.reason == "too_long", error.reason


def rlpr_answer(text: str) -> None:
    rlpr_match(extract_tagged_answer(text) or "", "42")


#: What the suites' verifiers call on a response.
EXTRACTORS: dict[str, Callable[[str], object]] = {
    "extract_boxed": extract_boxed,
    "extract_choice": extract_choice,
    "extract_code": extract_code,
    "final_answer": final_answer,
    "rlpr": rlpr_answer,
}


def best_time(function: Callable[[str], None], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - start)
    return best


def measure(
    families: list[tuple[str, Callable[[int], str]]],
    functions: dict[str, Callable[[str], object]],
    sizes: list[int],
    repeats: int,
) -> dict:
    """Times every function on every family; ratios are against the first family, same size.

    Returns {family: {size: {"worst": figures of the function with the largest ratio,
    "functions": {function: figures}}}}, figures being ``ms``, ``us_per_kib`` and ``ratio``.
    """
    results: dict[str, dict[str, dict]] = {name: {} for name, _ in families}
    for size in sizes:
        texts = [(name, build(size * KIB)) for name, build in families]
        for name, text in texts:
            assert len(text) == size * KIB, (name, len(text))
        per_function: dict[str, dict[str, float]] = {name: {} for name, _ in texts}
        for label, function in functions.items():
            for _, text in texts:
                function(text)  # warm caches (compiled regexes) outside the clock
            for name, text in texts:
                per_function[name][label] = best_time(function, text, repeats)
        for name, _ in texts:
            figures = {
                label: {
                    "ms": round(seconds * 1e3, 3),
                    "us_per_kib": round(seconds * 1e6 / size, 2),
                    "ratio": round(seconds / per_function[texts[0][0]][label], 2),
                }
                for label, seconds in per_function[name].items()
            }
            worst = max(figures, key=lambda label: figures[label]["ratio"])
            results[name][str(size)] = {"worst": {"function": worst, **figures[worst]}, "functions": figures}
    return results


def print_table(title: str, results: dict, sizes: list[int], named: bool) -> None:
    print(f"\n{title}")
    header = "".join(f" | {size:>4} KiB: us/KiB  ratio" for size in sizes)
    print(f"{'family':42s}{header}" + ("  (slowest relative to ordinary)" if named else ""))
    for name, by_size in results.items():
        worst = [by_size[str(size)]["worst"] for size in sizes]
        cells = "".join(f" | {figures['us_per_kib']:>17.1f} {figures['ratio']:>6.2f}" for figures in worst)
        print(f"{name:42s}{cells}" + (f"  {by_size[str(sizes[-1])]['worst']['function']}" if named else ""))
    worst = {s: max(by_size[str(s)]["worst"]["ratio"] for by_size in results.values()) for s in sizes}
    print(f"{'worst ratio':42s}" + "".join(f" | {'':>17} {worst[s]:>6.2f}" for s in sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256], help="input sizes in KiB")
    parser.add_argument("--repeats", type=int, default=5, help="runs per input; the best counts")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    actions = measure(ACTIONS, {"parse_workflow": parse}, args.sizes, args.repeats)
    responses = measure(RESPONSES, EXTRACTORS, args.sizes, args.repeats)
    too_long = repeat(REASONING, 4 * MAX_ACTION_CHARS, WORKFLOW)
    refused = best_time(refuse, too_long, args.repeats)

    print_table("(a) parse_workflow (limit lifted), per KiB and as a ratio to the ordinary action", actions, args.sizes, False)
    print_table("(b) the slowest answer extractor (relative to itself on the ordinary response)", responses, args.sizes, True)
    print(f"\nWith the default limit ({MAX_ACTION_CHARS // KIB} KiB), a {len(too_long) // KIB} KiB action is refused (too_long) in {refused * 1e6:.1f} us.")
    worst = {kind: {str(s): max(f[str(s)]["worst"]["ratio"] for f in results.values()) for s in args.sizes} for kind, results in (("parse", actions), ("extract", responses))}
    if args.json:
        figures = {
            "machine": f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs",
            "load_average": list(os.getloadavg()),
            "sizes_kib": args.sizes,
            "repeats": args.repeats,
            "parse": actions,
            "extract": responses,
            "worst_ratio": worst,
            "too_long_refusal_us": round(refused * 1e6, 2),
            "max_action_chars": MAX_ACTION_CHARS,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

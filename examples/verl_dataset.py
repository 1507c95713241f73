"""Write verl's parquet files for a Conductor env: train rows to train on, validation rows to watch.

The test split stays out of both: it measures the trained Conductor afterwards
(``conductor-env eval --split test``). Then point verl at the files and the reward function::

    python examples/verl_dataset.py --env Conductor-RG-v0 --pool simulated --out data/
    python -m verl.trainer.main_ppo data.train_files=data/train.parquet data.val_files=data/validation.parquet \\
        custom_reward_function.path=$(python -c 'import conductor_env.integrations.verl as m; print(m.__file__)') \\
        custom_reward_function.name=compute_score_batch reward_model.reward_manager=batch ...

Each row's ``extra_info["split"]`` is the split it comes from. A suite with only a test split
(BigCodeBench, LiveCodeBench) is refused unless asked for by name (``--split test
--allow-test-split``), and its rows that need a suite opt-in (``allow_unverified``,
``allow_public_only``) are refused without it: see docs/INTEGRATIONS.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from datasets import Dataset

import conductor_env  # noqa: F401  (registers the Conductor-*-v0 ids)
from conductor_env.integrations.verl import verl_rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Conductor-RG-v0", help="gym id")
    parser.add_argument("--pool", default="simulated", help="pool preset or .toml file")
    parser.add_argument("--split", default="train", help="the training split (default: train)")
    parser.add_argument("--allow-test-split", action="store_true", help="allow a test split named in --split or --val-split (warns: nothing is held out then)")
    parser.add_argument("--val-split", default="validation", help="the split verl validates on")
    parser.add_argument("--limit", type=int, default=4096, help="most training rows")
    parser.add_argument("--val-limit", type=int, default=256, help="most validation rows")
    parser.add_argument("--out", default=".", help="folder for train.parquet and validation.parquet")
    args = parser.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    opt_in = {"allow_test_split": True} if args.allow_test_split else {}
    train = verl_rows(args.env, pool=args.pool, split=args.split, limit=args.limit, **opt_in)
    validation = verl_rows(args.env, pool=args.pool, split=args.val_split, limit=args.val_limit, **opt_in)
    Dataset.from_list(train).to_parquet(str(out / "train.parquet"))
    Dataset.from_list(validation).to_parquet(str(out / "validation.parquet"))
    print(f"{len(train)} {args.split} rows -> {out / 'train.parquet'}; {len(validation)} {args.val_split} rows -> {out / 'validation.parquet'}")


if __name__ == "__main__":
    main()

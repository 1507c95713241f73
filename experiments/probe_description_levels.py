"""Can a linear probe read each stated level from the routers' description embeddings? (issue 59, item 3)

Draws pools from the generated family's training part and its held-out part, encodes every
worker's description with the routers' sentence encoder (all-MiniLM-L6-v2), and fits one
logistic-regression probe per stated fact (the level in each domain, whether it judges each
domain, the price tier) on training-part descriptions. Prints the probe's accuracy on unseen
training-part draws (same phrasings) and on held-out-part draws (phrasings never seen), beside
always answering the most common value. Writes nothing unless ``--json`` is given.

    python experiments/probe_description_levels.py --train-pools 300 --test-pools 100
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import numpy as np


def facts(pool_name: str, draws: int, offset: int) -> tuple[list[str], dict[str, list[str]]]:
    """Descriptions of ``draws`` pools of a family part and, per fact, each worker's stated value."""
    from conductor_env.workers.pool import load_pool

    family = load_pool(pool_name)
    texts: list[str] = []
    labels: dict[str, list[str]] = {}
    for seed in range(offset, offset + draws):
        for spec in family.for_episode(seed).specs:  # type: ignore[attr-defined]
            texts.append(spec.description)
            traits = spec.traits
            for domain, level in traits["solve"].items():
                labels.setdefault(f"level:{domain}", []).append(level)
                labels.setdefault(f"judges:{domain}", []).append(str(domain in traits["judge"]))
            labels.setdefault("price", []).append(traits["price"])
    return texts, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-pools", type=int, default=300)
    parser.add_argument("--test-pools", type=int, default=100)
    parser.add_argument("--json", default=None, help="also write the table here")
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    from conductor_env.agents.routers.encoder import shared_encoder

    encoder = shared_encoder()
    train_texts, train_labels = facts("generated", args.train_pools, 0)
    same_texts, same_labels = facts("generated", args.test_pools, 100_000)
    new_texts, new_labels = facts("generated-heldout", args.test_pools, 0)
    x_train, x_same, x_new = (encoder.encode(texts) for texts in (train_texts, same_texts, new_texts))
    rows = []
    for fact, values in sorted(train_labels.items()):
        probe = LogisticRegression(max_iter=2000, C=10.0).fit(x_train, values)
        majority = Counter(values).most_common(1)[0][0]
        row = {"fact": fact}
        for name, x, labels in (("same phrasings", x_same, same_labels[fact]), ("held-out phrasings", x_new, new_labels[fact])):
            row[name] = round(float(np.mean(probe.predict(x) == np.array(labels))), 3)
            row[f"{name}, majority"] = round(float(np.mean(np.array(labels) == majority)), 3)
        rows.append(row)
        print(
            f"{fact:22s} same phrasings {row['same phrasings']:.3f} (majority {row['same phrasings, majority']:.3f})   held-out phrasings {row['held-out phrasings']:.3f} (majority {row['held-out phrasings, majority']:.3f})"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"train_pools": args.train_pools, "test_pools": args.test_pools, "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()

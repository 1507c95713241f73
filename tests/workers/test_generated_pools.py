"""Generated pools: draws are deterministic, the parts never overlap, every draw is a valid simulated
pool whose best workflow differs per domain and between pools, and bad family tables are refused."""

from __future__ import annotations

import pickle
import re
from collections import Counter
from pathlib import Path

import pytest

from conductor_env.evaluation.oracle import oracle_report
from conductor_env.traits import TraitsError, check_traits
from conductor_env.workers.family import REGIMES
from conductor_env.workers.family_draw import describe, description_bound, draw_pool_specs, draw_rng, part_profiles
from conductor_env.workers.generated import GeneratedPool
from conductor_env.workers.pool import PoolError, WorkerPool, load_pool

FAMILY = Path(__file__).resolve().parents[2] / "conductor_env" / "pools" / "generated.toml"
DRAWS = range(120)


def _profile(pool: WorkerPool) -> tuple:
    """A pool's stated roles, independent of names and order."""
    return tuple(sorted((tuple(sorted(s.traits["solve"].items())), tuple(s.traits["judge"]), s.traits["price"]) for s in pool.specs))


def test_the_family_loads_as_a_generated_pool_and_each_part_draws_plain_pools() -> None:
    train, heldout = load_pool("generated"), load_pool("generated-heldout")
    assert isinstance(train, GeneratedPool) and isinstance(heldout, GeneratedPool)
    assert (train.family.part, heldout.family.part) == ("train", "heldout")
    member = load_pool("generated-heldout#3")
    assert type(member) is WorkerPool and member.name == "generated-heldout#3"
    assert [s.description for s in member.specs] == [s.description for s in heldout.for_episode(3).specs]


def test_draws_are_a_function_of_the_seed_alone() -> None:
    pool = load_pool("generated")
    first = [(s.name, s.description, dict(s.options)) for s in pool.for_episode(7).specs]
    again = [(s.name, s.description, dict(s.options)) for s in pickle.loads(pickle.dumps(pool)).for_episode(7).specs]
    other = [(s.name, s.description, dict(s.options)) for s in pool.for_episode(8).specs]
    assert first == again and first != other


def test_parts_share_no_name_phrasing_or_skill_profile() -> None:
    train, heldout = load_pool("generated"), load_pool("generated-heldout")
    train_pools = [train.for_episode(seed) for seed in DRAWS]
    heldout_pools = [heldout.for_episode(seed) for seed in DRAWS]
    assert not {s.name for p in train_pools for s in p.specs} & {s.name for p in heldout_pools for s in p.specs}
    assert not {_profile(p) for p in train_pools} & {_profile(p) for p in heldout_pools}
    for pools, other in ((train_pools, "heldout"), (heldout_pools, "train")):
        text = " ".join(s.description for p in pools for s in p.specs)
        fragments = {f.strip(" :;,") for ps in train.family.parts[other].phrases.values() for p in ps for f in p.split("{domains}")}
        assert not {f for f in fragments if len(f) > 3 and re.search(rf"\b{re.escape(f)}\b", text)}


def test_profiles_split_every_regime_assignment() -> None:
    domains = ("math", "language", "reasoning")
    shared, distinct = part_profiles("shared", domains), part_profiles("distinct", domains)
    assert len(shared) + len(distinct) == len(REGIMES) ** 3 and not set(shared) & set(distinct)
    assert {(d, combo[i]) for combo in shared for i, d in enumerate(domains)} == {(d, r) for d in domains for r in REGIMES}


@pytest.mark.parametrize("source", ["generated", "generated-heldout"])
def test_descriptions_state_the_traits_and_never_the_hidden_numbers(source: str) -> None:
    pool = load_pool(source)
    family = pool.family
    for seed in DRAWS:
        for spec in pool.for_episode(seed).specs:
            assert check_traits(spec.traits, spec.name) == spec.traits
            assert not re.search(r"\d", spec.description), spec.description
            assert len(spec.description) <= description_bound(family)
            for domain, level in spec.traits["solve"].items():
                skill = spec.options["skill"][domain]
                assert family.skill[level][0] <= skill <= family.skill[level][1]
                judges = domain in spec.traits["judge"]
                assert (spec.options["judge"][domain] != skill) == judges or family.skill["judge"][0] <= skill
            low, high = family.price[spec.traits["price"]]
            assert low <= spec.options["price_per_call"] <= high


def test_a_description_names_every_domain_with_a_word_of_its_part() -> None:
    family = load_pool("generated-heldout").family
    traits = {"solve": {"math": "strong", "language": "weak", "reasoning": "fair"}, "judge": ["language"], "price": "cheap"}
    for seed in range(30):
        text = describe(draw_rng(family, seed), family, traits)
        for domain in family.domains:
            assert any(word in text for word in family.parts["heldout"].words[domain])
        assert any(phrase in text for phrase in family.parts["heldout"].phrases["cheap"])


def test_the_best_workflow_differs_per_domain_and_between_pools() -> None:
    best_shapes: Counter[str] = Counter()
    pools_with_two_shapes = 0
    for seed in range(24):
        report = oracle_report(f"generated-heldout#{seed}", max_steps=3)
        shapes = {report["domains"][d]["oracle"]["shape"] for d in ("math", "language", "reasoning")}
        pools_with_two_shapes += len(shapes) > 1
        best_shapes.update(shapes)
    assert best_shapes["single"] and best_shapes["2-attempts+judge"]
    assert pools_with_two_shapes >= 20


def test_a_member_is_the_draw_of_its_index() -> None:
    specs = draw_pool_specs(load_pool("generated").family, 5)
    assert all(s.backend == "simulated" and s.price_in_per_m == 0 and s.price_out_per_m == 0 for s in specs)
    assert list(load_pool("generated#5").specs) == specs


def test_a_family_refuses_calls_to_its_slots() -> None:
    import asyncio

    with pytest.raises(PoolError, match="for_episode"):
        asyncio.run(load_pool("generated").call(0, [{"role": "user", "content": "hi"}]))


def _family_file(tmp_path: Path, old: str, new: str) -> str:
    text = FAMILY.read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / "family.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('part = "train"', 'part = "test"', "family.part"),
        ("workers = [3, 4]", "workers = [4, 3]", "family.workers"),
        ("workers = [3, 4]", "workers = [3, 40]", "family.workers"),
        ("workers = [3, 4]", 'workers = "many"', "family.workers"),
        ("strong = [0.86, 0.95]", "strong = [0.86, 1.5]", "family.skill.strong"),
        ("cheap = [0.01, 0.025]", "cheap = [-1, 0.025]", "family.price.cheap"),
        ('profiles = "distinct"', 'profiles = "shared"', "different profiles"),
        ('"quartz", "basalt"', '"kestrel", "basalt"', "share names"),
        ('math = ["mathematics", "calculation"]', 'math = ["math", "calculation"]', "share domain words"),
        ('fair = ["middling on {domains}"', 'fair = ["fair at {domains}"', "share phrasings"),
        ('weak = ["weak at {domains}"', 'weak = ["weak"', "must contain {domains}"),
        ('cheap = ["cheap"', 'cheap = ["cheap {domains}"', "no placeholders"),
        ('judge = ["reliably', 'judge = ["", "reliably', "non-empty strings"),
        ('domains = ["math", "language", "reasoning"]', 'domains = ["math", "language", "reasoning", "code"]', "at most 3 domains"),
    ],
)
def test_bad_family_tables_are_refused_with_the_key_at_fault(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(PoolError, match=re.escape(message)):
        load_pool(_family_file(tmp_path, old, new))


def test_members_and_extends_are_checked(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="draw's index"):
        load_pool("generated#three")
    with pytest.raises(PoolError, match=">= 0"):
        load_pool("generated#-1")
    with pytest.raises(PoolError, match="family pool only"):
        load_pool("orchestra-judge#2")
    looped = tmp_path / "loop.toml"
    looped.write_text(f'[family]\nextends = "{looped}"\n', encoding="utf-8")
    with pytest.raises(PoolError, match="deep"):
        load_pool(str(looped))
    no_family = tmp_path / "child.toml"
    no_family.write_text('[family]\nextends = "orchestra-judge"\n', encoding="utf-8")
    with pytest.raises(PoolError, match="no \\[family\\] table"):
        load_pool(str(no_family))


@pytest.mark.parametrize(
    "traits",
    [
        "strong",
        {"solve": {"math": "superb"}, "judge": [], "price": "cheap"},
        {"solve": {"math": "strong"}, "judge": "math", "price": "cheap"},
        {"solve": {"math": "strong"}, "judge": [], "price": "free"},
        {"solve": {"math": "strong"}, "judge": []},
    ],
)
def test_declared_traits_are_checked(traits: object, tmp_path: Path) -> None:
    with pytest.raises(TraitsError):
        check_traits(traits, "w")
    path = tmp_path / "pool.toml"
    path.write_text("[[workers]]\nid = 'a'\nbackend = 'simulated'\ntraits = " + _toml_value(traits) + "\n", encoding="utf-8")
    with pytest.raises(PoolError, match="worker 'a': traits"):
        load_pool(str(path))


def _toml_value(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"

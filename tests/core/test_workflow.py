"""The workflow language: lenient parsing, validation codes, canonical rendering."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_env.workflow import REASON_CODES, Step, Workflow, WorkflowError, parse_workflow

CANONICAL = 'model_id = [2, 0, 2]\nsubtasks = ["Plan", "Implement", "Check"]\naccess_list = [[], "all", "all"]'


def parse(text: str, **kwargs) -> Workflow:
    kwargs.setdefault("num_workers", 3)
    return parse_workflow(text, **kwargs)


def reason_of(text: str, **kwargs) -> str:
    with pytest.raises(WorkflowError) as caught:
        parse(text, **kwargs)
    assert caught.value.reason in REASON_CODES
    return caught.value.reason


def test_canonical_workflow() -> None:
    workflow = parse(CANONICAL)
    assert [s.worker for s in workflow.steps] == [2, 0, 2]
    assert [s.access for s in workflow.steps] == [(), (0,), (0, 1)]
    assert workflow.steps[1].access_all and not workflow.steps[0].access_all


@pytest.mark.parametrize(
    "text",
    [
        # free reasoning and a think block holding a decoy set
        "<think>model_id = [9]\nsubtasks = ['x']\naccess_list = [[]]</think>\nMy plan:\n" + CANONICAL,
        # fenced in backticks with bullets and label variants, ':' separators
        "```\n- Model IDs: [2, 0, 2]\n- Subtask: ['Plan', 'Implement', 'Check']\n- Access: [[], ['all'], 'all']\n```",
        '* model id = [2,0,2]\n* subtasks = [Plan, Implement, Check]\n* access list = [[], "all", "all"]',
        # JSON with true/false style content falls back from literal_eval to JSON
        'model_id: [2, 0, 2]\nsubtasks: ["Plan", "Implement", "Check"]\naccess_list: [[], ["all"], ["all"]]',
        # an unterminated think block opened by the chat template: text after </think> counts
        "thinking about it... model_id = [1]</think>" + CANONICAL,
    ],
)
def test_lenient_variants(text: str) -> None:
    workflow = parse(text)
    assert [s.worker for s in workflow.steps] == [2, 0, 2]
    assert [s.subtask for s in workflow.steps] == ["Plan", "Implement", "Check"]
    assert [s.access for s in workflow.steps] == [(), (0,), (0, 1)]


def test_last_complete_set_wins() -> None:
    text = 'model_id = [0]\nsubtasks = ["first draft"]\naccess_list = [[]]\nActually, better:\n' + CANONICAL + "\nmodel_id = [1]  (an incomplete trailing set is ignored)"
    assert [s.worker for s in parse(text).steps] == [2, 0, 2]


def test_labels_inside_subtasks_are_not_lists() -> None:
    text = 'model_id = [1]\nsubtasks = ["Write model_id = [5] and access: [0] into the doc, all of it"]\naccess_list = [[]]'
    workflow = parse(text)
    assert workflow.steps == (Step(1, "Write model_id = [5] and access: [0] into the doc, all of it", ()),)


@pytest.mark.parametrize(
    ("text", "kwargs", "reason"),
    [
        ("no lists here", {}, "no_lists"),
        ("model_id = [0]\nsubtasks = ['a']", {}, "no_lists"),
        ("model_id = [0, 1]\nsubtasks = ['a']\naccess_list = [[], []]", {}, "length_mismatch"),
        ("model_id = [3]\nsubtasks = ['a']\naccess_list = [[]]", {}, "bad_worker_id"),
        ("model_id = [-1]\nsubtasks = ['a']\naccess_list = [[]]", {}, "bad_worker_id"),
        ("model_id = [True]\nsubtasks = ['a']\naccess_list = [[]]", {}, "bad_worker_id"),
        ("model_id = [1.5]\nsubtasks = ['a']\naccess_list = [[]]", {}, "bad_worker_id"),
        ("model_id = [0]\nsubtasks = [['a']]\naccess_list = [[]]", {}, "bad_subtask"),
        ("model_id = [0]\nsubtasks = ['a']\naccess_list = ['some']", {}, "bad_access"),
        ("model_id = [0, 1]\nsubtasks = ['a', 'b']\naccess_list = [[], [0]]", {}, "bad_access"),
        ("model_id = [0, 1]\nsubtasks = ['a', 'b']\naccess_list = [[], [1]]", {"access": "indices"}, "bad_access"),
        ("model_id = [0]\nsubtasks = ['a']\naccess_list = [[0]]", {"access": "indices"}, "bad_access"),
        ("model_id = [0,0,0]\nsubtasks = ['a','b','c']\naccess_list = [[],[],[]]", {"max_steps": 2}, "too_many_steps"),
        ("model_id = []\nsubtasks = []\naccess_list = []", {}, "empty"),
    ],
)
def test_reason_codes(text: str, kwargs: dict, reason: str) -> None:
    assert reason_of(text, **kwargs) == reason


def test_indices_mode_and_empty_signal() -> None:
    workflow = parse("model_id = [0, 1, 2]\nsubtasks = ['a', 'b', 'c']\naccess_list = [[], [0], [1, 0, 1]]", access="indices")
    assert [s.access for s in workflow.steps] == [(), (0,), (0, 1)]
    assert parse("model_id = []\nsubtasks = []\naccess_list = []", allow_empty=True).is_empty


def test_non_text_action_is_a_workflow_error() -> None:
    with pytest.raises(WorkflowError):
        parse_workflow(None, num_workers=2)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ properties


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_text_raises_only_workflow_error(text: str) -> None:
    try:
        parse_workflow(text, num_workers=4)
    except WorkflowError:
        pass


_LISTY = st.lists(
    st.one_of(
        st.just("model_id = "),
        st.just("subtasks: "),
        st.just("access_list="),
        st.just("["),
        st.just("]"),
        st.just('"all"'),
        st.just("'"),
        st.just('"'),
        st.just(","),
        st.just("<think>"),
        st.just("</think>"),
        st.just("`"),
        st.just("\n- "),
        st.integers(-3, 9).map(str),
        st.text(max_size=5),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_LISTY, st.sampled_from(["binary", "indices"]), st.booleans())
def test_list_like_text_raises_only_workflow_error(text: str, access: str, allow_empty: bool) -> None:
    try:
        parse_workflow(text, num_workers=4, access=access, allow_empty=allow_empty)  # type: ignore[arg-type]
    except WorkflowError:
        pass


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    access_mode = draw(st.sampled_from(["binary", "indices"]))
    length = draw(st.integers(1, 5))
    steps = []
    for index in range(length):
        kind = draw(st.sampled_from(["none", "all"] + (["some"] if access_mode == "indices" and index else [])))
        if kind == "all":
            access, access_all = tuple(range(index)), True
        elif kind == "some":
            access, access_all = tuple(sorted(draw(st.sets(st.integers(0, index - 1), min_size=1)))), False
        else:
            access, access_all = (), False
        steps.append(Step(draw(st.integers(0, 6)), draw(st.text()), access, access_all))
    return Workflow(tuple(steps), access_mode)  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(workflows())
def test_render_parse_round_trip(workflow: Workflow) -> None:
    parsed = parse_workflow(workflow.render(), num_workers=7, access=workflow.access_mode)
    assert parsed == workflow

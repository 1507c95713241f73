"""``conductor-env serve``'s argument errors: one line, exit status 2, before anything listens."""

from __future__ import annotations

import socket

import pytest

from conductor_env.cli import main


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--policy", "single:zero", "--pool", "simulated"], ["single:zero"]),
        (["--policy", "single:0", "--pool", "no-such-pool"], ["no-such-pool"]),
        (["--policy", "single:0", "--pool", "simulated", "--env-option", "max_rouns=2"], ["max_rouns", "max_rounds"]),
        (["--policy", "single:0", "--pool", "simulated", "--env-option", "pool=x"], ["--pool"]),
        (["--policy", "single:0", "--pool", "simulated", "--env-option", "noequals"], ["noequals"]),
        (["--policy", "single:0", "--pool", "simulated", "--max-concurrency", "0"], ["--max-concurrency"]),
        (["--policy", "single:0", "--pool", "simulated", "--max-queue", "-1"], ["--max-queue"]),
        (["--policy", "single:0", "--pool", "simulated", "--timeout-s", "0"], ["--timeout-s"]),
    ],
)
def test_a_bad_argument_is_one_line_and_status_2(capsys, args, words):
    assert main(["serve", *args]) == 2
    error = capsys.readouterr().err
    assert error.startswith("conductor-env serve: error: ") and error.count("\n") == 1
    for word in words:
        assert word in error


def test_a_port_in_use_is_a_usage_error(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--policy", "single:0", "--pool", "simulated", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_serve_is_listed_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "serve" in capsys.readouterr().out

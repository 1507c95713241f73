"""Headless Chromium: render the viewer page, collect script errors, take a screenshot.

Used by the tests (the page must render without a JavaScript error) and by
``conductor-env report --screenshot``. Needs Debian's ``chromium`` package (or any Chromium or
Chrome binary on ``PATH``); the browser runs with a throwaway profile and no network features.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
_CONSOLE = re.compile(r":(INFO|WARNING|ERROR):CONSOLE[^\]]*\]\s*(.*)")


class BrowserError(RuntimeError):
    """No browser was found, or it failed to render the page."""


@dataclass(frozen=True)
class RenderResult:
    """What the browser saw.

    Attributes:
        dom: The page's DOM after its scripts ran (serialised).
        console: Console messages the page logged (``level: text``).
        errors: Uncaught exceptions and console errors among them.
        screenshot: The PNG written, if one was asked for.
    """

    dom: str
    console: list[str]
    errors: list[str]
    screenshot: Path | None


def find_browser() -> str | None:
    """Returns the path of a Chromium-family browser, or ``None``."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(browser: str, url: str, extra: list[str], profile: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    command = [browser, *FLAGS, f"--user-data-dir={profile}", *extra, url]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env={**os.environ, "LANG": "C.UTF-8"})
    except subprocess.TimeoutExpired as error:
        raise BrowserError(f"{browser} did not finish rendering {url} within {timeout_s:.0f} s") from error


def render_page(
    html_path: str | os.PathLike[str],
    *,
    screenshot: str | os.PathLike[str] | None = None,
    window: tuple[int, int] = (1400, 1000),
    fragment: str = "",
    timeout_s: float = 120.0,
) -> RenderResult:
    """Loads a local HTML file in headless Chromium.

    Args:
        html_path: The page.
        screenshot: Where to write a PNG of the first screen (``None``: no screenshot).
        window: Window size in pixels (width, height).
        fragment: A URL fragment for the page (the viewer reads filters from it, e.g.
            ``"policy=moa:3"``).
        timeout_s: Limit per browser run.

    Returns:
        The rendered DOM and the console messages.

    Raises:
        BrowserError: When no browser is installed or it fails.
    """
    browser = find_browser()
    if browser is None:
        raise BrowserError("no Chromium found; install Debian's chromium package (apt-get install chromium)")
    url = Path(html_path).resolve().as_uri() + (f"#{fragment.lstrip('#')}" if fragment else "")
    size = f"--window-size={window[0]},{window[1]}"
    with tempfile.TemporaryDirectory(prefix="conductor-env-chromium-") as profile:
        # Virtual time lets the page's scripts finish before the DOM is serialised.
        dumped = _run(browser, url, [size, "--virtual-time-budget=5000", "--dump-dom"], os.path.join(profile, "a"), timeout_s)
        if dumped.returncode != 0 or "<html" not in dumped.stdout.lower():
            raise BrowserError(f"{browser} failed on {url} (exit {dumped.returncode}): {dumped.stderr.strip()[-500:]}")
        logs = dumped.stderr
        shot: Path | None = None
        if screenshot is not None:
            shot = Path(screenshot).resolve()
            shot.parent.mkdir(parents=True, exist_ok=True)
            taken = _run(browser, url, [size, "--virtual-time-budget=5000", f"--screenshot={shot}"], os.path.join(profile, "b"), timeout_s)
            logs += taken.stderr
            if taken.returncode != 0 or not shot.is_file():
                raise BrowserError(f"{browser} could not take a screenshot of {url}: {taken.stderr.strip()[-500:]}")
    console = [f"{m.group(1).lower()}: {m.group(2)}" for m in map(_CONSOLE.search, logs.splitlines()) if m]
    errors = [line for line in console if line.startswith("error:") or "Uncaught" in line]
    return RenderResult(dom=dumped.stdout, console=console, errors=errors, screenshot=shot)

"""A real headless browser for tests: Playwright (from PyPI) driving Chromium from
Debian's packages, so that nothing is downloaded at test time.

Use it from a test module by importing the fixtures::

    from ._browser import browser_fixture, browser_page_fixture  # noqa: F401

    def test_page(browser_page):
        browser_page.page.goto(url)
        ...
        assert browser_page.dialogs == []

When Playwright or Chromium is missing the tests skip with a reason that says
how to install them (``-ra`` prints it in the summary); with
``TOKENSMITH_REQUIRE_BROWSER=1`` (set by ``.ci/run``) they fail instead, so
that CI can never pass without having run them. ``TOKENSMITH_CHROMIUM`` names
another Chromium binary.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REQUIRE_ENV = "TOKENSMITH_REQUIRE_BROWSER"
INSTALL_HINT = (
    "install them with `apt-get update && apt-get install -y chromium` (Debian's Chromium) "
    "and `pip install playwright` (or `pip install -e '.[test]'`); "
    "no `playwright install` download is needed"
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chromium_path() -> str | None:
    """The Chromium binary to drive: ``$TOKENSMITH_CHROMIUM`` or Debian's ``chromium``."""
    env = os.environ.get("TOKENSMITH_CHROMIUM")
    if env:
        return env if Path(env).exists() else shutil.which(env)
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def browser_unavailable(reason: str) -> None:
    """Skip (loudly, with how to install), or fail when the browser is required."""
    message = f"browser tests need Playwright and Chromium: {reason}; {INSTALL_HINT}"
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{message} ({REQUIRE_ENV} is set, so this is an error)", pytrace=False)
    pytest.skip(message)


class _Shared:
    """One Playwright driver and one Chromium for the whole process.

    Each test module that imports the fixtures gets its own copy of the
    session fixture, but Playwright's sync API can run only once per thread,
    so the copies share this and the last one to finish closes it.
    """

    playwright: Any = None
    browser: Any = None
    users = 0

    @classmethod
    def acquire(cls) -> Any:
        if cls.browser is None:
            try:
                from playwright.sync_api import sync_playwright
            except ImportError:
                browser_unavailable("the `playwright` package is not installed")
            exe = chromium_path()
            if exe is None:
                env = os.environ.get("TOKENSMITH_CHROMIUM")
                browser_unavailable(f"TOKENSMITH_CHROMIUM={env!r} is not a program" if env
                                    else "no `chromium` on PATH")
            cls.playwright = sync_playwright().start()
            try:
                cls.browser = cls.playwright.chromium.launch(
                    executable_path=exe,
                    headless=True,
                    # containers and root (CI) have no user namespaces for Chromium's sandbox
                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
                )
            except Exception as e:  # the binary is there but does not start
                cls.playwright.stop()
                cls.playwright = None
                browser_unavailable(f"Chromium at {exe} did not start: {e}")
        cls.users += 1
        return cls.browser

    @classmethod
    def release(cls) -> None:
        cls.users -= 1
        if cls.users == 0 and cls.browser is not None:
            try:
                cls.browser.close()
            finally:
                cls.playwright.stop()
                cls.browser = cls.playwright = None


@pytest.fixture(scope="session", name="browser")
def browser_fixture() -> Iterator[Any]:
    """A headless Chromium (Playwright ``Browser``), shared by the whole test session."""
    browser = _Shared.acquire()
    try:
        yield browser
    finally:
        _Shared.release()


@dataclass
class BrowserPage:
    """A fresh page, with what it did that a test must check: dialogs (``alert`` …)
    and JavaScript errors."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """Save a PNG and check that it is one."""
        self.page.screenshot(path=str(path), full_page=full_page)
        assert_png(path)
        return path


def assert_png(path: Path) -> None:
    data = Path(path).read_bytes()
    assert data.startswith(PNG_SIGNATURE), f"{path} is not a PNG"
    assert len(data) > 1000, f"{path} is a suspiciously small PNG ({len(data)} bytes)"


@pytest.fixture(name="browser_page")
def browser_page_fixture(browser: Any) -> Iterator[BrowserPage]:
    """A new page in its own context (no shared storage), 1200x900."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    bp = BrowserPage(page)

    def on_dialog(dialog: Any) -> None:
        bp.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda err: bp.errors.append(str(err)))
    page.on("console", lambda msg: bp.errors.append(msg.text) if msg.type == "error" else None)
    try:
        yield bp
    finally:
        context.close()

"""The browser tests' one place for Chromium, the site's server, page visits and the hang guard.

Every wait in a browser test is for a state (a selector, a function, no request in flight), never for a time.
What bounds each wait is one hang guard, `limits.WAIT_MS`, set on every browser context here, so that a
machine busy with other work is slow, not red, while a page that truly hangs still fails, with Playwright's
message naming the state it waited for.

The fixtures `server` and `browser` (tests/conftest.py) are per session: with pytest-xdist, one server and
one Chromium per worker, shared by all its site tests.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from limits import WAIT_MS  # the hang guard of every browser wait

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
#: `MINIGPT_SCREENSHOTS=full`: every page's screenshot is of the whole page (1-3 s a page, measured: about
#: 40 s of the site tests on 2 cores); by default the first screen (0.1 s), which shows each page's header,
#: title and opening.
FULL_PAGE_SCREENSHOTS = os.environ.get("MINIGPT_SCREENSHOTS", "") == "full"
LOCAL_HOSTS = ("127.0.0.1", "localhost")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port, for the duration of the block: its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@contextmanager
def chromium() -> Iterator[object]:
    """Debian's Chromium, headless, driven by Playwright; closed (and its processes reaped) after the block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=WAIT_MS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page, name: str) -> None:
    """The page's screenshot into _build/screenshots/<name>.png (the whole page with MINIGPT_SCREENSHOTS=full)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=FULL_PAGE_SCREENSHOTS)


def new_context(browser, **context_options):
    """A browser context (desktop-sized unless told) whose every wait is bounded by the hang guard alone."""
    context = browser.new_context(**{**DESKTOP, **context_options})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context


class Visit:
    """One page load with its console errors, its failed requests and the requests that tried to leave
    localhost (aborted). In its own context unless given one (`context=`, shared by several visits and closed
    by its owner); `context_options` go to `new_context` (e.g. a phone's viewport and is_mobile). With
    `count_bytes`, the bytes of every response are counted (`sizes`: reading each body costs a round trip).

    The visit starts once the page has loaded and no request is in flight (`settle`); `failed`, `external`
    and `problems()` settle again before they answer, so that a request the page made later is counted.
    Playwright's ``networkidle`` waits for the same and then for 500 ms of quiet more, half a second a visit."""

    def __init__(self, browser, url: str, *, context=None, count_bytes: bool = False, **context_options) -> None:
        self._owns_context = context is None
        self.context = new_context(browser, **context_options) if context is None else context
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self._external: list[str] = []
        self._failed: list[str] = []
        self._in_flight: set[object] = set()  # requests sent, not yet finished or failed
        #: With `count_bytes`: the bytes of every response the page loaded, by URL (raw, as served).
        self.sizes: dict[str, int] = {}
        if count_bytes:
            self.page.on("response", self._count)
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("pageerror", lambda err: self.errors.append(f"uncaught: {err}"))
        self.page.on("request", self._request_sent)
        self.page.on("requestfinished", self._request_finished)
        self.page.on("requestfailed", self._request_failed)
        self.page.route("**/*", self.handler)
        self.page.goto(url, wait_until="load")
        self.settle()

    def _request_sent(self, request) -> None:
        self._in_flight.add(request)

    def _request_finished(self, request) -> None:
        self._in_flight.discard(request)

    def _request_failed(self, request) -> None:
        self._in_flight.discard(request)
        self._failed.append(request.url)

    def settle(self) -> None:
        """Wait until no request of the page is in flight (bounded by the hang guard, `WAIT_MS`)."""
        deadline = time.monotonic() + WAIT_MS / 1000
        while self._in_flight:
            if time.monotonic() > deadline:
                raise TimeoutError(f"requests still in flight after {WAIT_MS} ms: "
                                   f"{sorted(r.url for r in self._in_flight)}")
            self.page.wait_for_timeout(25)  # lets Playwright deliver the page's events

    @property
    def external(self) -> list[str]:
        """The requests that tried to leave localhost (aborted), once none is in flight."""
        self.settle()
        return self._external

    @property
    def failed(self) -> list[str]:
        """The requests that failed (a missing file, an aborted request), once none is in flight."""
        self.settle()
        return self._failed

    def _count(self, response) -> None:
        try:
            self.sizes[response.url] = len(response.body())
        except Exception as err:  # noqa: BLE001 (a redirect has no body: say so)
            self._failed.append(f"{response.url} (no body: {err})")

    def handler(self, route) -> None:
        url = route.request.url
        if url.startswith("data:") or urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self._external.append(url)
            route.abort()

    def problems(self) -> list[str]:
        """What went wrong on the page, each kind with its list; empty when the visit was clean."""
        return [f"{kind}: {what}" for kind, what in (("console errors", self.errors), ("requests left localhost",
                self.external), ("requests failed", self.failed)) if what]

    def close(self) -> None:
        if self._owns_context:
            self.context.close()
        else:
            self.page.close()

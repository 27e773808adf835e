"""Headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-
pipe``: JSON messages ending in a NUL byte on file descriptors 3 and 4), so tests can open a
page, read it and move the mouse without a driver package."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from typing import Any

__all__ = ["Browser", "chromium"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page."""

    def __init__(self, executable: str, width: int = 1200, height: int = 900):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def pipes_on_3_and_4():  # in the child only: Chromium reads fd 3, writes fd 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self._process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            preexec_fn=pipes_on_3_and_4,  # noqa: PLW1509  (runs before the fds are closed)
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)

    def send(self, method: str, *, session: bool = False, **params) -> dict[str, Any]:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)
        for _ in range(200):
            if self.evaluate("document.readyState") == "complete":
                return
            self.evaluate("new Promise(r => setTimeout(r, 50))")
        raise RuntimeError(f"{url} did not load")

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x, y=y)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # the browser may close before replying
            self.send("Browser.close")
        self._process.wait(timeout=30)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

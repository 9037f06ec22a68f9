"""The HTML report in a real browser: headless Chromium via the DevTools protocol.

Chromium (Debian package ``chromium``; ``.ci/run`` installs it when missing) is driven over
``--remote-debugging-pipe`` with the standard library only: the page is loaded from a
file URL, and every console message, uncaught exception and log entry (network,
security/CSP, rendering) is collected. The report must load with **no** error, and its
plots must be real rendered SVG elements (non-zero layout boxes, with drawn marks).

The test FAILS (never skips) when no Chromium is found: set ``FASTPRIV_CHROMIUM`` to the
executable, or install it (``apt-get install -y chromium``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
              "chrome", "headless_shell")


def find_chromium() -> str:
    """Path of a Chromium executable, or fail with installation instructions."""
    env = os.environ.get("FASTPRIV_CHROMIUM")
    if env:
        if shutil.which(env) or os.path.isfile(env):
            return shutil.which(env) or env
        pytest.fail(f"FASTPRIV_CHROMIUM={env!r} is not an executable")
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("the browser test needs headless Chromium and none was found on PATH "
                f"(tried {', '.join(CANDIDATES)}): install it with `apt-get install -y "
                "chromium` (Debian/Ubuntu) or point FASTPRIV_CHROMIUM at the executable")


class _Pipe:
    """DevTools protocol over --remote-debugging-pipe (fd 3: to Chromium, fd 4: from it)."""

    def __init__(self, exe: str, profile: str, timeout: float) -> None:
        self.timeout = timeout
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        self.log = open(os.path.join(profile, "stderr.log"), "wb")

        def _fds() -> None:  # in the child: our pipe ends become fds 3 and 4
            import fcntl

            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)    # out of the way of 3 and 4 first
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)                               # dup2 clears close-on-exec
            os.dup2(b, 4)

        args = [exe, "--headless", "--remote-debugging-pipe",
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--hide-scrollbars", f"--user-data-dir={os.path.join(profile, 'ud')}",
                "about:blank"]
        # os.pipe() descriptors are close-on-exec; only the dup2'ed 3 and 4 are inherited
        self.proc = subprocess.Popen(args, preexec_fn=_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log)
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self._recv()
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str | None = None) -> dict:
        for i, m in enumerate(self.events):
            if m.get("method") == method and (session is None or m.get("sessionId") == session):
                return self.events.pop(i)
        while True:
            m = self._recv()
            if m.get("method") == method and (session is None or m.get("sessionId") == session):
                return m
            self.events.append(m)

    def _recv(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium within "
                                   f"{self.timeout:.0f} s; its log: {self._log_tail()}")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe; its log: {self._log_tail()}")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def _log_tail(self) -> str:
        try:
            self.log.flush()
            with open(self.log.name, "rb") as fh:
                return fh.read()[-2000:].decode(errors="replace")
        except OSError:
            return "(unavailable)"

    def close(self) -> None:
        try:
            os.write(self.w, json.dumps({"id": 10 ** 6, "method": "Browser.close"}).encode()
                     + b"\0")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()


_PROBE = """(() => {
  const svgs = Array.from(document.querySelectorAll('svg'));
  return {
    title: document.title,
    ready: document.readyState,
    n_svg: svgs.length,
    svgs: svgs.map(s => {
      const r = s.getBoundingClientRect();
      return {cls: s.getAttribute('class') || '', w: r.width, h: r.height,
              marks: s.querySelectorAll('polyline,polygon,circle,rect,line').length};
    }),
    n_script: document.querySelectorAll('script').length,
    text: document.body ? document.body.innerText.length : 0,
    h1: (document.querySelector('h1') || {}).textContent || null,
    body_width: document.body ? document.body.scrollWidth : 0
  };
})()"""


def load_in_chromium(path: str | Path, *, timeout: float = 60.0,
                     screenshot: str | Path | None = None, width: int = 1100) -> dict:
    """Load a local HTML file in headless Chromium; return what the page did.

    Returns ``{"errors": [...], "warnings": [...], "console": [...], "probe": {...}}``:
    errors are console messages of type error/assert, uncaught exceptions and log entries
    of level error (failed loads, CSP violations); ``probe`` is :data:`_PROBE` evaluated
    after the load event. ``screenshot`` saves a PNG of the full page.
    """
    exe = find_chromium()
    url = Path(path).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="fastpriv-chromium-") as prof:
        cdp = _Pipe(exe, prof, timeout)
        try:
            target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = cdp.send("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                cdp.send(f"{domain}.enable", session=sid)
            cdp.send("Emulation.setDeviceMetricsOverride", {
                "width": int(width), "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=sid)
            cdp.send("Page.navigate", {"url": url}, session=sid)
            cdp.wait_event("Page.loadEventFired", session=sid)
            probe = cdp.send("Runtime.evaluate", {"expression": _PROBE, "returnByValue": True},
                             session=sid)["result"]["value"]
            if screenshot is not None:
                m = cdp.send("Page.getLayoutMetrics", session=sid)
                size = m.get("cssContentSize") or m["contentSize"]
                shot = cdp.send("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": size["width"],
                             "height": min(size["height"], 16000), "scale": 1}},
                    session=sid)
                import base64

                Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            # one more round trip so that late console/log events are delivered
            cdp.send("Runtime.evaluate", {"expression": "1"}, session=sid)
        finally:
            cdp.close()
    errors, warnings, console = [], [], []
    for ev in cdp.events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            console.append(f"{p['type']}: {text}")
            if p["type"] in ("error", "assert"):
                errors.append(f"console.{p['type']}: {text}")
            elif p["type"] == "warning":
                warnings.append(f"console.warn: {text}")
        elif method == "Runtime.exceptionThrown":
            det = p["exceptionDetails"]
            errors.append("exception: " + det.get("exception", {}).get("description",
                                                                        det.get("text", "")))
        elif method == "Log.entryAdded":
            ent = p["entry"]
            line = f"{ent['level']} [{ent['source']}]: {ent['text']} {ent.get('url', '')}"
            console.append(line)
            if ent["level"] == "error":
                errors.append(line)
            elif ent["level"] == "warning":
                warnings.append(line)
    return {"errors": errors, "warnings": warnings, "console": console, "probe": probe}


# ============================================================================ tests
@pytest.fixture(scope="module")
def adult_report_html(tmp_path_factory):
    import fastpriv as fp
    from fastpriv.anonymize import anatomy
    from fastpriv.report import build_report

    adult = fp.datasets.load_adult()
    an = anatomy(adult, sensitive="occupation", l=3, seed=0)
    table = an.auditor_view(adult)
    rep = build_report(table, sensitive="occupation", group="group_id",
                       qi=["age", "workclass", "marital_status", "race", "sex"], max_set_size=1,
                       sigma=["Exec-managerial", "Prof-specialty", "Armed-Forces"])
    path = tmp_path_factory.mktemp("browser") / "report.html"
    path.write_text(rep.to_html(), encoding="utf-8")
    return path, rep


@pytest.mark.slow
def test_report_loads_without_errors_and_plots_render(adult_report_html):
    path, rep = adult_report_html
    res = load_in_chromium(path)
    assert res["errors"] == [], res["errors"]
    probe = res["probe"]
    assert probe["ready"] == "complete"
    assert probe["title"] == rep.data["title"]
    assert probe["n_script"] == 0
    classes = [s["cls"] for s in probe["svgs"]]
    # the disclosure curve, the breach-probability bars and one skyline chart per
    # (plotted value, confidence)
    assert sum("disclosure-curve" in c for c in classes) == 1
    assert sum("bp-bars" in c for c in classes) == 1
    n_sky = len(rep.data["skyline"]["plotted"]) * len(rep.data["skyline"]["confidences"])
    assert sum("skyline-chart" in c for c in classes) == n_sky >= 2
    for s in probe["svgs"]:
        assert s["w"] > 100 and s["h"] > 100, s          # laid out, not collapsed
        assert s["marks"] > 3, s                          # something was drawn
    assert probe["text"] > 2000


def test_harness_sees_errors(tmp_path):
    """The checker itself: a page with a console error, an exception and a blocked script."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                    "<meta http-equiv='Content-Security-Policy' content=\"script-src "
                    "'unsafe-inline'\"><title>bad</title></head><body><svg width='50' "
                    "height='50'><rect width='10' height='10'/></svg><script>console.error("
                    "'boom'); undefined_function();</script></body></html>")
    res = load_in_chromium(page)
    assert any("boom" in x for x in res["errors"]), res
    assert any("undefined_function" in x for x in res["errors"]), res
    assert res["probe"]["n_svg"] == 1


def test_escaped_labels_render_as_text(tmp_path):
    """Hostile labels: the page shows them as text, runs nothing and logs no error."""
    import pyarrow as pa

    from fastpriv.report import build_report

    evil = "<script>console.error('pwned')</script>"
    t = pa.table({"g": [evil, evil, evil, "b", "b", "b"],
                  "s": [evil, "flu", "flu", "flu", evil, "hiv"]})
    rep = build_report(t, sensitive="s", group="g", k_max=3, min_size=2, min_l=2)
    page = tmp_path / "evil.html"
    page.write_text(rep.to_html(), encoding="utf-8")
    res = load_in_chromium(page)
    assert res["errors"] == [], res["errors"]
    assert res["probe"]["n_script"] == 0
    assert not any("pwned" in x for x in res["console"])

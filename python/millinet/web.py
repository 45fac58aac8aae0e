"""Web pages over the emulated path (docs/emulator.md, "Web pages"): a set of generated pages,
an HTTP/1.1 server for them and headless Chromium's page load time, taken from the browser's
own navigation timing (W3C Navigation Timing Level 2: `loadEventStart` of the page's
navigation entry, from its `startTime`). The `millinet web` commands run them, in the
emulator's namespaces as `--server` and `-- COMMAND`."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import tempfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# name -> (objects, bytes each): few and many objects, small and large (a small object is an
# icon's size, a large one a photograph's).
PAGES = {
    "few-small": (4, 10_000),
    "few-large": (4, 500_000),
    "many-small": (48, 10_000),
    "many-large": (48, 100_000),
}

# The page records its own navigation timing into the document once its load event starts;
# Chromium's --dump-dom prints the document after that.
TIMING_SCRIPT = """<script>
window.addEventListener("load", () => {
  const n = performance.getEntriesByType("navigation")[0];
  document.getElementById("timing").textContent = JSON.stringify({
    load_ms: n.loadEventStart - n.startTime,
    dom_content_loaded_ms: n.domContentLoadedEventStart - n.startTime,
    response_end_ms: n.responseEnd - n.startTime,
  });
});
</script>"""

CHROMIUM = "chromium"
# Headless, no GPU, and a fresh profile each load (nothing cached); the sandbox needs user
# namespaces a network namespace of the emulator's does not give.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions")


def write_site(directory: Path, seed: int = 1) -> list[str]:
    """Writes each page of PAGES into `directory/NAME/` (index.html and its objects); returns
    the page names. Each object is an asynchronous script of exactly its size, a comment of
    random hexadecimal digits from `seed`: the browser fetches them in parallel and must
    receive every byte before the load event (an image it cannot decode it may abandon)."""
    rng = random.Random(seed)
    for name, (objects, object_bytes) in PAGES.items():
        page = Path(directory) / name
        page.mkdir(parents=True, exist_ok=True)
        scripts = "\n".join(f'<script async src="object-{k}.js"></script>' for k in range(objects))
        for k in range(objects):
            digits = rng.randbytes((object_bytes - 4) // 2 + 1).hex()[: object_bytes - 4]
            (page / f"object-{k}.js").write_text(f"/*{digits}*/")
        (page / "index.html").write_text(
            f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{name}</title></head><body>\n"
            f"{scripts}\n<pre id=\"timing\"></pre>\n{TIMING_SCRIPT}\n</body></html>\n"
        )
    return list(PAGES)


class _QuietHandler(SimpleHTTPRequestHandler):
    # Persistent connections, as a browser expects of a web server.
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass


def serve(directory: Path, port: int) -> None:
    """Serves `directory` over HTTP/1.1 on every address, until killed."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    with ThreadingHTTPServer(("", port), handler) as server:
        server.serve_forever()


class LoadFailed(Exception):
    """Chromium did not load the page or the page recorded no timing."""


def load(url: str, timeout_s: float = 60.0) -> dict:
    """Loads `url` in headless Chromium with a fresh profile; returns the page's navigation
    timing (`load_ms`, `dom_content_loaded_ms`, `response_end_ms`)."""
    with tempfile.TemporaryDirectory(prefix="millinet-chromium-") as profile:
        command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise LoadFailed(f"{url}: no load within {timeout_s:g} s") from None
        except FileNotFoundError:
            raise LoadFailed(f"{CHROMIUM} is not installed (make deps installs it)") from None
    start = done.stdout.find('<pre id="timing">{')
    if done.returncode != 0 or start < 0:
        raise LoadFailed(f"{url}: Chromium exited {done.returncode} without the page's timing: {done.stderr.strip()[-300:]}")
    text = done.stdout[start + len('<pre id="timing">') :]
    return json.loads(text[: text.index("</pre>")])

"""The documentation site (`make docs`, docsite/): built strictly as `make docs` builds it, served
over HTTP and opened in headless Chromium without a console message; its search index, CLI
reference, citations turned into links and images."""

import functools
import html
import http.server
import json
import posixpath
import re
import shlex
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlsplit

import click
import matplotlib.image
import numpy as np
import pytest

from conftest import console_messages, in_browser
from millinet.cli import cli

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 300


def docs_build_command() -> list[str]:
    """The Makefile's DOCS_BUILD, the command `make docs` runs."""
    printed = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", "print-docs-build: ; @echo $(DOCS_BUILD)", "print-docs-build"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    return shlex.split(printed)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [*docs_build_command(), "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=BUILD_TIMEOUT_S,
    )
    assert result.returncode == 0, f"the strict build failed:\n{result.stderr}"
    return out


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> str:
    """The site over HTTP on an ephemeral port of 127.0.0.1: its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def commands(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    """Every command and subcommand of the click group, as (command path, command)."""
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            found += commands(command.get_command(click.Context(command), name), f"{path} {name}")
    return found


def test_index_renders_in_chromium(served, tmp_path):
    shot = tmp_path / "index.png"
    result = in_browser(served + "index.html", "--window-size=1280,900", f"--screenshot={shot}")
    assert console_messages(result.stderr) == []
    image = matplotlib.image.imread(shot)
    assert image.shape[:2] == (900, 1280)
    colours = np.unique(image.reshape(-1, image.shape[2]), axis=0)
    assert len(colours) > 50, f"a blank page: {len(colours)} colours"


def test_inner_page_opens_without_console_messages(served):
    result = in_browser(served + "models/channel.html", "--dump-dom")
    assert console_messages(result.stderr) == []
    assert "<h1" in result.stdout and "md-tabs" in result.stdout


def test_search_index_finds_model_pages(site):
    index = json.loads((site / "search" / "search_index.json").read_text())
    hits = {entry["location"].partition("#")[0] for entry in index["docs"] if "HARQ" in entry["text"]}
    assert any(location.startswith("models/") for location in hits), sorted(hits)


def test_cli_reference_has_every_command(site):
    page = (site / "cli-reference.html").read_text()
    for path, command in commands(cli, "millinet"):
        if path != "millinet":
            assert f'id="{path.replace(" ", "-")}"' in page, path
        ctx = click.Context(command, info_name=path)
        assert html.escape(command.get_usage(ctx), quote=False) in page, path


def anchor_ids(page: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', page.read_text()))


def test_citations_are_working_links(site):
    """Every `docs/x.md`, `docs/x.md#anchor` and `docs/x.md §N` in the text links to that page
    (and heading); code blocks keep theirs as text."""
    kinds = set()
    code_blocks = 0
    for page in site.rglob("*.html"):
        text = page.read_text()
        for href, inner in re.findall(r'<a href="([^"]*)">((?:<code>)?docs/[^<]*(?:</code>)?[^<]*)</a>', text):
            cited = re.fullmatch(r"(?:<code>)?docs/([\w./-]+)\.md(?:#([\w-]+))?(?:</code>)?(?: §([\d.]+))?", inner)
            assert cited, inner
            url = urlsplit(href)
            target = site / posixpath.normpath(posixpath.join(page.parent.relative_to(site).as_posix(), url.path))
            assert target == site / f"{cited[1]}.html", (page, href, inner)
            assert not cited[2] or cited[2] == url.fragment, (page, href)
            if url.fragment:
                assert url.fragment in anchor_ids(target), (page, href)
            if cited[3]:
                heading = re.search(rf'<h\d id="{re.escape(url.fragment)}">([^<]*)', target.read_text())
                assert heading and re.match(rf"{re.escape(cited[3])}\.?\s", heading[1]), (page, href, inner)
            kinds.add("§" if cited[3] else "#" if cited[2] else "code" if "<code>" in inner else "page")
        for block in re.findall(r"<pre.*?</pre>", text, re.S):
            code_blocks += "docs/" in block
            assert "<a " not in block, (page, block)
    assert kinds == {"§", "#", "code", "page"}, kinds
    assert code_blocks, "no code block cites a docs/ page: nothing shows that code stays untouched"


def test_home_page_links_and_images(site):
    """The README's links into docs/ point at the site's pages; every linked or embedded image
    of docs/img is on the site."""
    home = (site / "index.html").read_text()
    assert 'href="studies.html"' in home and 'href="docs/' not in home
    images = set()
    for page in site.rglob("*.html"):
        for url in re.findall(r'(?:href|src)="([^":#]*img/[^"#]*\.(?:png|svg|jpg))"', page.read_text()):
            images.add(url)
            assert (page.parent / url).is_file(), (page, url)
    assert images

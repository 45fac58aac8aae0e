"""Every reference to a document resolves inside the repository.

A clone is all a user has: a citation such as `docs/models/channel.md §6`, `docs/studies.md#urban`
or a Markdown link `[ran](models/ran.md#harq)` must name a file the clone contains and a heading
(or an explicit `id`) that file has. Checked in the docs, the Rust, Python, C and TOML sources
(scenario descriptions included), the Makefile, and the CLI's own help and scenario list.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pymdownx.slugs
import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]

# Text files that may cite documents; fuzz corpora are inputs, not prose.
SCANNED_SUFFIXES = {".md", ".rs", ".py", ".toml", ".c", ".h", ".cc", ".sh"}
SCANNED_NAMES = {"Makefile", "run"}
# The docs site's own files name pages relative to docs/ and show the citations it links.
EXCLUDED_PREFIXES = ("fuzz/corpus/", "fuzz/artifacts/", "docsite/")
# These tests cite dangling references on purpose: this one to show they are caught, the docs
# site's to show which forms it turns into links.
EXCLUDED_FILES = {"tests/test_doc_references.py", "tests/test_docs_site.py"}
# Markdown files millinet writes (a study's or a report's table), named but not cited.
WRITTEN_BY_MILLINET = {"table.md", "report.md"}

# The same slugs as the docs site (docsite/mkdocs.yml) and GitHub: lower case, punctuation dropped.
SLUGIFY = pymdownx.slugs.slugify(case="lower")

# `path.md`, optionally followed by `#anchor` or `§N[.M]`; not the tail of a URL or a longer path.
CITATION = re.compile(r"(?<![\w/.\-:])((?:\.\.?/)*(?:[\w.\-]+/)*[\w\-]+\.md)(?:#([\w\-]+)|[ \u00a0]?§ ?(\d+(?:\.\d+)*))?")
# A Markdown link or image: [text](target "title").
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ID = re.compile(r"""(?:\bid=["']([\w\-]+)["']|\{#([\w\-]+)\})""")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Dangling:
    where: str
    reference: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reference!r}: {self.why}"


def heading_text(markdown: str) -> str:
    """A heading as the site renders it: links to their text, code and emphasis marks dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"\{#[\w\-]+\}", "", text)
    return text.replace("`", "").replace("*", "").strip()


def targets_of(path: Path) -> tuple[set[str], set[str]]:
    """The anchors (heading slugs and explicit ids) and section numbers of a Markdown file."""
    anchors: set[str] = set()
    sections: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        anchors.update(a or b for a, b in EXPLICIT_ID.findall(line))
        heading = HEADING.match(line)
        if heading:
            text = heading_text(heading.group(2))
            anchors.add(SLUGIFY(text, "-"))
            number = re.match(r"(\d+(?:\.\d+)*)\.?\s", text)
            if number:
                sections.add(number.group(1))
    return anchors, sections


class Resolver:
    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[Path, tuple[set[str], set[str]]] = {}

    def file(self, reference: str, base: Path | None) -> Path | None:
        """`reference` relative to the citing file's folder (Markdown links and docs), else to the
        repository's root; None when neither is a file of the repository."""
        for folder in ([base] if base is not None else []) + [self.root]:
            candidate = (folder / reference).resolve()
            if candidate.is_file() and candidate.is_relative_to(self.root):
                return candidate
        return None

    def check(self, where: str, reference: str, path: str, anchor: str | None, section: str | None, base: Path | None) -> Dangling | None:
        target = self.file(path, base) if path else None
        if target is None:
            return Dangling(where, reference, "no such file in the repository")
        if anchor is None and section is None:
            return None
        if target.suffix != ".md":
            return Dangling(where, reference, f"{target.relative_to(self.root)} is not a Markdown file, it has no headings")
        anchors, sections = self.cache.setdefault(target, targets_of(target))
        if anchor is not None and anchor not in anchors:
            return Dangling(where, reference, f"{target.relative_to(self.root)} has no heading or id {anchor!r}")
        if section is not None and section not in sections:
            return Dangling(where, reference, f"{target.relative_to(self.root)} has no heading numbered {section}")
        return None


def file_name_literal(line: str, match: re.Match) -> bool:
    """A string literal that is nothing but a file name (`"cli.md"`) is code opening a file,
    not a citation; a literal with more in it (`"docs/models/transport.md §1"`) is shown to someone."""
    start, end = match.span()
    return match.group(2) is None and match.group(3) is None and 0 < start and end < len(line) and line[start - 1] in "\"'" and line[end] == line[start - 1]


def references_in(text: str, where: str, own: Path | None, resolver: Resolver) -> list[Dangling]:
    """The dangling references of `text`, cited from `where`. `own` is the citing file when it is
    Markdown: its links are checked too, and relative paths start from its folder."""
    base = own.parent if own is not None else None
    dangling = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        place = f"{where}:{number}"
        if own is not None and FENCE.match(line):
            in_fence = not in_fence
            continue
        references = [] if own is None or in_fence else [
            (target, target.partition("#")[0], target.partition("#")[2] or None, None)
            for target in MARKDOWN_LINK.findall(line)
            if not re.match(r"[a-z][a-z0-9+.\-]*:", target)  # https:, mailto:, ...
        ]
        # A link's text may name its target in any form; the target itself is checked above.
        prose = MARKDOWN_LINK.sub("", line) if own is not None else line
        references += [
            (match.group(0), *match.groups())
            for match in CITATION.finditer(prose)
            if Path(match.group(1)).name not in WRITTEN_BY_MILLINET and not file_name_literal(prose, match)
        ]
        # A link's target is also a citation: each reference once per line.
        for reference, path, anchor, section in dict.fromkeys(references):
            path = path or own.name  # `[x](#heading)`: a heading of the citing page
            found = resolver.check(place, reference, path, anchor or None, section, base)
            if found:
                dangling.append(found)
    return dangling


def scanned_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True).stdout.splitlines()
    return sorted(
        name
        for name in listed
        if not name.startswith(EXCLUDED_PREFIXES)
        and name not in EXCLUDED_FILES
        and (Path(name).suffix in SCANNED_SUFFIXES or Path(name).name in SCANNED_NAMES)
        and (REPO / name).is_file()
    )


def test_every_reference_in_the_repository_resolves():
    resolver = Resolver(REPO)
    dangling: list[Dangling] = []
    for name in scanned_files():
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        dangling += references_in(text, name, REPO / name if name.endswith(".md") else None, resolver)
    assert not dangling, f"{len(dangling)} references name a file or heading the repository lacks:\n" + "\n".join(map(str, dangling))


def cli_texts() -> dict[str, str]:
    """Every command's --help, as the CLI prints it, and `millinet scenarios`."""
    import click

    from millinet.cli import cli as main

    texts: dict[str, str] = {}

    def walk(command: click.Command, path: list[str]) -> None:
        texts["millinet " + " ".join(path) + " --help"] = CliRunner().invoke(main, [*path, "--help"], terminal_width=200).output
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])

    walk(main, [])
    listing = CliRunner().invoke(main, ["scenarios"], terminal_width=200)
    assert listing.exit_code == 0, listing.output
    texts["millinet scenarios"] = listing.output
    return texts


def test_the_cli_cites_only_what_a_clone_contains():
    resolver = Resolver(REPO)
    texts = cli_texts()
    assert len(texts) > 10, sorted(texts)
    dangling = [found for where, text in texts.items() for found in references_in(text, where, None, resolver)]
    assert not dangling, "\n".join(map(str, dangling))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("see no-such-page.md §8", "no such file"),
        ("docs/models/channel.md §99", "no heading numbered 99"),
        ("docs/studies.md#no-such-study", "no heading or id 'no-such-study'"),
        ("[a link](docs/nowhere.md)", "no such file"),
        ("Makefile#target", None),
    ],
)
def test_a_dangling_reference_is_named(text, why):
    found = references_in(text, "example.md", REPO / "example.md", Resolver(REPO))
    if why is None:
        assert found == []
    else:
        assert len(found) == 1 and why in found[0].why, found
        assert found[0].where == "example.md:1"


def test_numbered_sections_and_anchors_are_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n## 3. Blockage models\n### 3.2 Markov\n<a id=\"short\"></a>\n## `urban` — dense urban\n```\n## 9. not a heading\n```\n")
    resolver = Resolver(tmp_path)
    ok = "page.md §3, page.md §3.2, page.md#short, page.md#urban--dense-urban, [x](page.md#3-blockage-models)"
    assert references_in(ok, "cite.md", tmp_path / "cite.md", resolver) == []
    assert [d.reference for d in references_in("page.md §9", "cite.md", tmp_path / "cite.md", resolver)] == ["page.md §9"]

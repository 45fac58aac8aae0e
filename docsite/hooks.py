"""Build-time additions to the documentation site (mkdocs.yml's `hooks`); nothing is written
into docs/.

- Pages made from other files: the home page from README.md, benchmarks.md from BENCHMARKS.md,
  and cli-reference.md from the click commands of python/millinet/cli.py.
- Links are read as GitHub reads them, relative to the page's file in the repository: a link to
  a file under docs/ (or README.md, BENCHMARKS.md) points at its page on the site; a link to
  any other file of the repository (../crates/..., ../bench/...), which has no page here, is
  no link on the site: its text, followed by the file's repository path in code unless the
  text shows it.
- Citations in the text, `docs/path.md`, `docs/path.md#anchor` and `docs/path.md §N` (the
  heading numbered N, "## N. Title" or "### N.M Title"), backticked or not, become links to
  that page or heading. They are found by Python-Markdown's inline processing, which never
  looks inside code blocks or code spans.
- A list right after a paragraph line starts there, as on GitHub.
"""

import html
import inspect
import logging
import posixpath
import re
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit, urlunsplit
from xml.etree import ElementTree as etree

import markdown
from markdown.extensions import Extension
from markdown.inlinepatterns import BACKTICK_RE, BacktickInlineProcessor, InlineProcessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.millinet")

# Pages made from a repository file: the page's path on the site -> that file.
FROM_REPOSITORY = {"index.md": "README.md", "benchmarks.md": "BENCHMARKS.md"}
CLI_REFERENCE = "cli-reference.md"

# The build in progress: mkdocs renders one page at a time, and the Markdown extension below
# (created anew for each page) reads the page from here.
build = SimpleNamespace(config=None, files=None, page=None, headings={})


def on_config(config):
    build.config, build.headings = config, {}
    config.markdown_extensions.append(RepositoryLinks())
    return config


def on_files(files, config):
    repository = Path(config.docs_dir).parent
    for page, source in FROM_REPOSITORY.items():
        files.append(File.generated(config, page, content=(repository / source).read_text(encoding="utf-8")))
    files.append(File.generated(config, CLI_REFERENCE, content=cli_reference()))
    build.files = files
    return files


def on_page_markdown(markdown_text, page, config, files):
    build.page = page
    return markdown_text


# Where a page's file is in the repository, and where a repository file is on the site.


def repository_path(site_path: str) -> str:
    return FROM_REPOSITORY.get(site_path, "docs/" + site_path)


def site_path(repository_file: str) -> str | None:
    if repository_file.startswith("docs/"):
        return repository_file.removeprefix("docs/")
    return {source: page for page, source in FROM_REPOSITORY.items()}.get(repository_file)


# A citation: docs/path.md, maybe with #anchor, maybe followed by " §N" (a numbered heading).
CITED = r"docs/(?P<path>[\w./-]+?\.md)(?:#(?P<anchor>[\w-]+))?"
SECTION = r" §(?P<number>\d+(?:\.\d+)*)"


class RepositoryLinks(Extension):
    def extendMarkdown(self, md):
        # Code spans, in place of Python-Markdown's own (same name and priority).
        md.inlinePatterns.register(CodeCitation(BACKTICK_RE), "backtick", 190)
        # After raw HTML (90), so that the attributes of inline HTML are never read as text.
        md.inlinePatterns.register(TextCitation(rf"(?<![\w./-]){CITED}(?:{SECTION})?(?![\w-])", md), "millinet-citation", 85)
        # After inline processing (20), before mkdocs resolves and checks the links (0).
        md.treeprocessors.register(SitePaths(md), "millinet-site-paths", 1)
        # After fenced code is stashed (25).
        md.preprocessors.register(ListAfterParagraph(md), "millinet-list-after-paragraph", 24)


class ListAfterParagraph(Preprocessor):
    """GitHub starts a list on the line after a paragraph's; Python-Markdown needs a blank line
    between them, so one is added. Fenced code is stashed by now, and a line at column 0 is
    never inside an indented code block."""

    def run(self, lines):
        out = []
        for line in lines:
            after = out[-1] if out else ""
            if re.match(r"([-*+]|1\.) ", line) and after.strip() and not after[0].isspace() and not re.match(r"([-*+]|\d+\.) ", after):
                out.append("")
            out.append(line)
        return out


def citation(cited: re.Match, section: re.Match | None) -> etree.Element:
    """An empty link to the cited page (or heading), relative to the page's repository file."""
    anchor = section_anchor(f"docs/{cited['path']}", section["number"]) if section else cited["anchor"]
    here = posixpath.dirname(repository_path(build.page.file.src_uri))
    href = posixpath.relpath(f"docs/{cited['path']}", here) + (f"#{anchor}" if anchor else "")
    return etree.Element("a", href=href)


class CodeCitation(BacktickInlineProcessor):
    """Python-Markdown's code spans; one that holds just a citation (`docs/x.md`, maybe followed
    by §N) is also a link, unless it is already a link's text."""

    def handleMatch(self, m, data):
        code, start, end = super().handleMatch(m, data)
        cited = re.fullmatch(CITED, code.text) if isinstance(code, etree.Element) else None
        if cited is None or (data[start - 1 : start] == "[" and data[end : end + 1] == "]"):
            return code, start, end
        section = re.match(SECTION, data[end:])
        link = citation(cited, section)
        link.append(code)
        if section:
            code.tail, end = section[0], end + len(section[0])
        return link, start, end


class TextCitation(InlineProcessor):
    """A citation in the text (not in code, not in a link's text) becomes a link."""

    ANCESTOR_EXCLUDES = ("a",)

    def handleMatch(self, m, data):
        link = citation(m, m if m["number"] else None)
        link.text = AtomicString(m[0])
        return link, m.start(0), m.end(0)


def section_anchor(cited: str, number: str) -> str:
    """The anchor of the heading numbered NUMBER ("12. Title", "3.2 Title") of the docs/ page
    CITED, from its table of contents as the site's toc extension makes it."""
    page = site_path(cited)
    if page not in build.headings:
        file = build.files.get_file_from_path(page)
        if file is None:
            build.headings[page] = []  # mkdocs reports the link to a missing page
        else:
            extensions = [e for e in build.config.markdown_extensions if not isinstance(e, RepositoryLinks)]
            md = markdown.Markdown(extensions=extensions, extension_configs=build.config.mdx_configs)
            md.convert(file.content_string)
            build.headings[page] = list(flatten(md.toc_tokens))
    for heading in build.headings[page]:
        if re.match(rf"{re.escape(number)}\.?(\s|$)", heading["name"]):
            return heading["id"]
    if build.headings[page]:
        log.warning(f"Doc file '{build.page.file.src_uri}' cites {cited} §{number}, which has no heading numbered {number}")
    return ""


def flatten(tokens):
    for token in tokens:
        yield token
        yield from flatten(token["children"])


class SitePaths(Treeprocessor):
    """Links and images, written relative to the page's repository file, made relative to its
    page on the site; a link to a repository file without a page becomes code."""

    def run(self, root):
        page = build.page.file.src_uri
        here = posixpath.dirname(repository_path(page))
        for parent in list(root.iter()):
            for element in parent:
                key = {"a": "href", "img": "src"}.get(element.tag)
                url = urlsplit(element.get(key) or "")
                if key is None or url.scheme or url.netloc or not url.path or url.path.startswith("/"):
                    continue
                target = posixpath.normpath(posixpath.join(here, unquote(url.path)))
                on_site = site_path(target)
                if on_site is not None:
                    relative = posixpath.relpath(on_site, posixpath.dirname(page) or ".")
                    element.set(key, urlunsplit(("", "", relative, url.query, url.fragment)))
                elif element.tag == "a":
                    leave_site(element, target)


def leave_site(link, target: str) -> None:
    """`[text](../crates/x.rs)` becomes the text, then (`crates/x.rs`) unless the text shows it;
    `[crates/x.rs](../crates/x.rs)` becomes `crates/x.rs`."""
    text = "".join(link.itertext())
    link.tag, link.attrib = "span", {"title": f"{target} in the repository"}
    if text == target and not len(link):
        link.tag, link.text = "code", AtomicString(target)
    elif target not in text:
        if len(link):
            link[-1].tail = (link[-1].tail or "") + " ("
        else:
            link.text = (link.text or "") + " ("
        code = etree.SubElement(link, "code")
        code.text, code.tail = AtomicString(target), ")"


# The CLI reference.


def cli_reference() -> str:
    """Every command and subcommand of `millinet`, from click's own description of them: usage,
    help text, options and their help as `millinet COMMAND --help` prints them."""
    import click

    from millinet.cli import cli

    lines = [
        "# CLI reference",
        "",
        "Every command of `millinet`, generated from the CLI itself (python/millinet/cli.py) when the",
        "site is built: what `millinet COMMAND --help` prints. docs/cli.md explains the commands",
        "with examples.",
        "",
    ]

    def describe(command: click.Command, ctx: click.Context, depth: int) -> None:
        path = ctx.command_path
        if depth:
            lines.extend([f"{'#' * min(depth + 1, 6)} `{path}` {{#{anchor(path)}}}", ""])
        lines.extend(["```text", command.get_usage(ctx), "```", ""])
        text = inspect.cleandoc((command.help or "").split("\f")[0])
        lines.extend([prose("\n".join(line for line in text.splitlines() if line.strip() != "\b")), ""])
        params = [(param, param.get_help_record(ctx)) for param in command.get_params(ctx)]
        arguments = [record for param, record in params if isinstance(param, click.Argument) and record and record[1]]
        options = [record for param, record in params if isinstance(param, click.Option) and record]
        for title, records in (("Arguments", arguments), ("Options", options)):
            if records:
                lines.extend([f"{title}:", ""])
                lines.extend(f"- `{names}`" + (f" — {prose(about)}" if about else "") for names, about in records)
                lines.append("")
        if isinstance(command, click.Group):
            subcommands = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
            subcommands = [(name, sub) for name, sub in subcommands if sub is not None and not sub.hidden]
            lines.extend(["Commands:", ""])
            for name, sub in subcommands:
                lines.append(f"- [`{path} {name}`](#{anchor(f'{path} {name}')}) — {prose(sub.get_short_help_str(limit=300))}")
            lines.append("")
            for name, sub in subcommands:
                describe(sub, click.Context(sub, info_name=name, parent=ctx), depth + 1)

    describe(cli, click.Context(cli, info_name="millinet"), 0)
    return "\n".join(lines)


def anchor(command_path: str) -> str:
    return command_path.replace(" ", "-")


def prose(text: str) -> str:
    """Help text as Markdown: its `code spans` kept, the rest shown as written."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(part if part.startswith("`") else re.sub(r"([\\*_\[\]])", r"\\\1", html.escape(part, quote=False)) for part in parts)

"""MkDocs hooks of Frieda's documentation site (mkdocs.yml, `hooks:`).

The pages link files of the repository outside docs/ (benchmark reports and plots, the tests'
READMEs) with relative paths, which work wherever the Markdown is read in the repository. MkDocs
knows only docs/ and would call those links dead. This hook checks that each such target exists
(a warning otherwise, which `mkdocs build --strict` turns into a failure), copies it into the
site under `repo/`, and points the link there, so the built site stands on its own. Links inside
docs/ are left to MkDocs' own validation (mkdocs.yml `validation:`)."""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path

from mkdocs.plugins import get_plugin_logger
from mkdocs.utils import get_relative_url

log = get_plugin_logger("frieda_docs")

SCHEME = "frieda-repo:"
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+).+?(?<!`)\1(?!`)")
LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)(>?(?:\s+\"[^\"]*\")?\s*\))")
HREF = re.compile(r'((?:href|src)=")' + re.escape(SCHEME) + r'([^"#]*)(#[^"]*)?"')

_copies: set[str] = set()


def _repo_root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _outside(target: str, page_src: str, docs_dir: Path, root: Path) -> str | None:
    """The repository path of a relative link target that leaves docs/, else None."""
    if re.match(r"^[a-zA-Z][\w+.-]*:", target) or target.startswith(("/", "#")):
        return None
    path = target.split("#", 1)[0]
    inside = posixpath.normpath(posixpath.join(posixpath.dirname(page_src), path))
    if not inside.startswith("../"):
        return None
    return Path(posixpath.normpath(str((docs_dir / inside)))).resolve().relative_to(root).as_posix()


def on_pre_build(config) -> None:
    _copies.clear()


def on_page_markdown(markdown: str, page, config, files) -> str:
    root, docs_dir = _repo_root(config), Path(config.docs_dir).resolve()
    out = []
    fence = None
    for line in markdown.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip().startswith(fence) and not line.strip()[len(fence):].strip():
            fence = None
        elif fence is None:
            spans = [s.span() for s in CODE_SPAN.finditer(line)]

            def fix(m: re.Match) -> str:
                if any(a <= m.start() < b for a, b in spans):
                    return m.group(0)
                target = m.group(2)
                try:
                    repo_path = _outside(target, page.file.src_uri, docs_dir, root)
                except ValueError:
                    log.warning("%s: link %r leaves the repository", page.file.src_uri, target)
                    return m.group(0)
                if repo_path is None:
                    return m.group(0)
                if not (root / repo_path).exists():
                    log.warning("%s: link %r: %s does not exist in the repository",
                                page.file.src_uri, target, repo_path)
                    return m.group(0)
                _copies.add(repo_path)
                anchor = "#" + target.split("#", 1)[1] if "#" in target else ""
                return m.group(1) + SCHEME + repo_path + anchor + m.group(3)

            line = LINK.sub(fix, line)
        out.append(line)
    return "\n".join(out)


def on_page_content(html: str, page, config, files) -> str:
    return HREF.sub(lambda m: m.group(1) + get_relative_url("repo/" + m.group(2), page.url)
                    + (m.group(3) or "") + '"', html)


def on_post_build(config) -> None:
    root, site = _repo_root(config), Path(config.site_dir)
    for repo_path in sorted(_copies):
        src, dest = root / repo_path, site / "repo" / repo_path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dest)

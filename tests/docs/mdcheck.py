"""What tests/docs/test_docs.py checks, as functions of Markdown text, so the checks can be tried
on a page of their own (test_docs.py breaks one on purpose) and the MkDocs hook can share the
link parsing.

- Links and anchors: every relative link of a page names a file or directory that exists, and
  every `#anchor` names a heading of its target page as GitHub makes heading ids (and, for pages
  of the site under docs/, as MkDocs does too), or an explicit `<a id>`.
- Commands: every `frieda` / `frieda-bench` command line of a fenced shell block uses
  subcommands and long options that the binary's `--help` lists.
- Paths: every `scripts/...` named exists and is executable; every repository path in
  backticks (`tests/...`, `crates/...`, `bench/...`, `docs/...`, ...) exists.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"

SHELL_LANGS = {"bash", "sh", "shell", "console", "shell-session"}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)[^\n]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# a path of the repository as the pages name them, from its root
REPO_PATH = re.compile(r"^(?:tests|crates|bench|docs|scripts|packaging|fuzz|vendor)/[\w./-]*$")
SCRIPT_PATH = re.compile(r"(?<![\w./-])(scripts/[A-Za-z0-9_.-]*[A-Za-z0-9_-])")


@dataclass
class Segment:
    """A run of prose, or one fenced code block (with its info string's language)."""
    code: bool
    lang: str
    text: str
    line: int  # 1-based line of the segment's first line in its file


def segments(text: str) -> list[Segment]:
    out: list[Segment] = []
    lines = text.split("\n")
    buf: list[str] = []
    start = 1
    fence = None
    lang = ""
    for i, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None and m:
            if buf:
                out.append(Segment(False, "", "\n".join(buf), start))
            fence, lang, buf, start = m.group(1), m.group(2).lower(), [], i + 1
        elif fence is not None and re.match(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", line):
            out.append(Segment(True, lang, "\n".join(buf), start))
            fence, buf, start = None, [], i + 1
        else:
            buf.append(line)
    if buf:
        out.append(Segment(fence is not None, lang if fence else "", "\n".join(buf), start))
    return out


def prose_without_code_spans(seg: Segment) -> str:
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), seg.text)


def code_spans(text: str) -> list[str]:
    return [m.group(2).strip() for s in segments(text) if not s.code for m in CODE_SPAN.finditer(s.text)]


def links(text: str) -> list[str]:
    """Targets of the inline links and images of a page (not those inside code)."""
    return [m.group(1) for s in segments(text) if not s.code for m in LINK.finditer(prose_without_code_spans(s))]


# ---------------------------------------------------------------- headings and their ids

def heading_texts(text: str) -> list[str]:
    out = []
    for s in segments(text):
        if s.code:
            continue
        for line in s.text.split("\n"):
            m = HEADING.match(line)
            if m:
                out.append(m.group(2))
    return out


def plain(heading: str) -> str:
    """A heading's text as rendered: code spans and links keep their text, emphasis goes."""
    h = CODE_SPAN.sub(lambda m: m.group(2), heading)
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"<[^>]+>", "", h)
    return re.sub(r"(\*\*|\*|__)", "", h)


def github_slug(heading: str) -> str:
    s = plain(heading).strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def mkdocs_slug(heading: str) -> str:
    """Python-Markdown's toc slugify, MkDocs' default."""
    s = unicodedata.normalize("NFKD", plain(heading)).encode("ascii", "ignore").decode("ascii")
    s = re.sub(r"[^\w\s-]", "", s).strip().lower()
    return re.sub(r"[-\s]+", "-", s)


def _unique(slugs: list[str], sep: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for s in slugs:
        if s in seen:
            seen[s] += 1
            out.add(f"{s}{sep}{seen[s]}")
        else:
            seen[s] = 0
            out.add(s)
    return out


def anchors(text: str, style: str) -> set[str]:
    heads = heading_texts(text)
    if style == "github":
        ids = _unique([github_slug(h) for h in heads], "-")
    else:
        ids = _unique([mkdocs_slug(h) for h in heads], "_")
    return ids | set(HTML_ANCHOR.findall(text))


# ---------------------------------------------------------------- links

def link_problems(page: Path, text: str | None = None) -> list[str]:
    """Dead relative links and unknown anchors of one page."""
    text = page.read_text() if text is None else text
    problems = []
    for target in links(text):
        if re.match(r"^[a-zA-Z][\w+.-]*:", target) or target.startswith("//"):
            continue  # a URL (http:, mailto:): not checked here
        path, _, anchor = target.partition("#")
        if target.startswith("/"):
            problems.append(f"{page.name}: absolute link {target!r} (links are relative)")
            continue
        dest = (page.parent / path).resolve() if path else page.resolve()
        if path and not dest.exists():
            problems.append(f"{page.name}: link {target!r}: {dest} does not exist")
            continue
        if anchor and dest.suffix == ".md":
            body = text if dest == page.resolve() else dest.read_text()
            if anchor not in anchors(body, "github"):
                problems.append(f"{page.name}: link {target!r}: no heading of {dest.name} has the id #{anchor} (GitHub)")
            elif DOCS in dest.parents and anchor not in anchors(body, "mkdocs"):
                problems.append(f"{page.name}: link {target!r}: no heading of {dest.name} has the id #{anchor} (MkDocs)")
    return problems


# ---------------------------------------------------------------- paths

def path_problems(page: Path, text: str | None = None, root: Path = REPO_ROOT) -> list[str]:
    text = page.read_text() if text is None else text
    problems = []
    for name in sorted(set(SCRIPT_PATH.findall(text))):
        p = root / name
        if not p.is_file():
            problems.append(f"{page.name}: {name} does not exist")
        elif not os.access(p, os.X_OK):
            problems.append(f"{page.name}: {name} is not executable")
    for span in sorted(set(code_spans(text))):
        if REPO_PATH.match(span) and not span.startswith("scripts/") and not (root / span.rstrip("/")).exists():
            problems.append(f"{page.name}: `{span}` does not exist")
    return problems


# ---------------------------------------------------------------- commands

def strip_comment(line: str) -> str:
    """The line without its shell comment: a # at a word's start, outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def logical_lines(block: str) -> list[str]:
    """The command lines of a shell block: continuation lines joined, heredoc bodies left out,
    a `$ ` prompt dropped."""
    out: list[str] = []
    pending = ""
    heredoc = None
    for raw in block.split("\n"):
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = strip_comment(raw).rstrip()
        if line.startswith("$ "):
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        m = re.search(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1", line)
        if m:
            heredoc = m.group(2)
        if line.strip():
            out.append(line)
    if pending.strip():
        out.append(pending)
    return out


CONTROL = re.compile(r"^[|&;()<>]+$")
PROGRAMS = {"frieda", "frieda-bench"}


def commands(block: str) -> list[tuple[str, list[str]]]:
    """(program, arguments) of every frieda / frieda-bench command in a shell block, aliases
    (`alias fa='frieda admin ...'`) expanded."""
    aliases: dict[str, list[str]] = {}
    out = []
    for line in logical_lines(block):
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = ""
        try:
            tokens = list(lex)
        except ValueError:
            continue
        # split at operators; what follows a redirection starts a "segment" that names no
        # program of ours, so it is passed over below
        seg: list[list[str]] = [[]]
        for t in tokens:
            if CONTROL.match(t):
                seg.append([])
            else:
                seg[-1].append(t)
        for words in seg:
            words = list(words)
            while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in ("sudo", "exec", "nohup", "time")):
                words.pop(0)
            if not words:
                continue
            if words[0] == "alias" and len(words) > 1 and "=" in words[1]:
                name, _, body = words[1].partition("=")
                expansion = shlex.split(body)
                if expansion and Path(expansion[0]).name in PROGRAMS:
                    aliases[name] = expansion
                    out.append((Path(expansion[0]).name, expansion[1:]))
                continue
            if words[0] in aliases:
                exp = aliases[words[0]]
                out.append((Path(exp[0]).name, exp[1:] + words[1:]))
                continue
            if words[:2] == ["cargo", "run"] and "--" in words:
                bins = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--bin"]
                if bins and bins[0] in PROGRAMS:
                    out.append((bins[0], words[words.index("--") + 1:]))
                continue
            prog = Path(words[0]).name
            if prog in PROGRAMS and (words[0] == prog or "/" in words[0]):
                out.append((prog, words[1:]))
    return out


@dataclass
class Help:
    commands: set[str] = field(default_factory=set)
    options: dict[str, bool] = field(default_factory=dict)  # long name -> takes a value
    shorts: dict[str, bool] = field(default_factory=dict)
    positionals: bool = False


def parse_help(text: str) -> Help:
    h = Help()
    section = ""
    for line in text.split("\n"):
        if re.match(r"^\S.*:$", line):
            section = line[:-1]
            continue
        if section == "Commands":
            m = re.match(r"^  ([a-z][\w-]*)(\s|$)", line)
            if m:
                h.commands.add(m.group(1))
        elif section == "Arguments":
            if line.strip():
                h.positionals = True
        elif section == "Options":
            m = re.match(r"^\s+(?:-(\w), )?--([\w.-]+)(?:[ =](\[?)<[^>]+>)?", line)
            if m:
                takes = bool(m.group(0).endswith(">")) and not m.group(3)
                h.options[m.group(2)] = takes
                if m.group(1):
                    h.shorts[m.group(1)] = takes
            else:
                m = re.match(r"^\s+-(\w)(?:\s+<[^>]+>)?", line)
                if m:
                    h.shorts[m.group(1)] = "<" in m.group(0)
    return h


def binary(prog: str) -> Path:
    frieda = Path(os.environ.get("FRIEDA_BIN", REPO_ROOT / "target" / "release" / "frieda"))
    return frieda if prog == "frieda" else frieda.with_name(prog)


@lru_cache(maxsize=None)
def help_of(prog: str, path: tuple[str, ...]) -> Help:
    r = subprocess.run([str(binary(prog)), *path, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"{prog} {' '.join(path)} --help exited {r.returncode}: {r.stderr}")
    return parse_help(r.stdout)


def command_problem(prog: str, args: list[str], help_of=help_of) -> str | None:
    """Why `prog args` would be refused by its argument parser, or None."""
    path: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        h = help_of(prog, tuple(path))
        if a == "--":
            break
        if a.startswith("--"):
            name = a[2:].split("=", 1)[0]
            if name not in h.options:
                where = " ".join([prog, *path])
                return f"`{where}` has no option --{name}"
            if h.options[name] and "=" not in a:
                i += 1
        elif a.startswith("-") and len(a) > 1 and not a[1].isdigit():
            c = a[1]
            if c not in h.shorts:
                return f"`{' '.join([prog, *path])}` has no option -{c}"
            if h.shorts[c] and len(a) == 2:
                i += 1
        elif h.commands and not (path and h.positionals):
            if a not in h.commands:
                return f"`{' '.join([prog, *path])}` has no subcommand {a!r} (it has: {', '.join(sorted(h.commands))})"
            path.append(a)
        i += 1
    return None


def command_problems(page: Path, text: str | None = None, help_of=help_of) -> list[str]:
    text = page.read_text() if text is None else text
    problems = []
    for s in segments(text):
        if not s.code or s.lang not in SHELL_LANGS:
            continue
        for prog, args in commands(s.text):
            why = command_problem(prog, args, help_of)
            if why:
                problems.append(f"{page.name} (block at line {s.line}): {prog} {' '.join(args)}: {why}")
    return problems


def pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]

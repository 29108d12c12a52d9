"""The documentation checked as its reader uses it (issue 59, item 7): README.md and every page
under docs/ (the site MkDocs builds; `mkdocs build --strict` checks the links between its pages).

- Every relative link resolves to a file or directory of the repository, and every #anchor names
  a heading of its target as GitHub makes heading ids (and, for pages under docs/, as MkDocs
  does): MkDocs does not look at README.md, nor at links leaving docs/.
- "Commands that no longer run": every `frieda` / `frieda-bench` command of a fenced shell block
  uses subcommands and long options the binary's `--help` lists (the binary: FRIEDA_BIN, else
  target/release/frieda; frieda-bench beside it); every `scripts/...` named exists and is
  executable; every repository path in backticks (tests/..., crates/..., bench/..., docs/...)
  exists.

The last test breaks each check on purpose, so a checker that stopped finding anything fails."""

from __future__ import annotations

import pytest

import mdcheck as m

PAGES = m.pages()
IDS = [p.relative_to(m.REPO_ROOT).as_posix() for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_links_and_anchors_resolve(page):
    problems = m.link_problems(page)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_named_paths_exist(page):
    problems = m.path_problems(page)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_commands_use_options_the_binary_has(page):
    if not m.binary("frieda").exists():
        pytest.skip(f"no broker binary at {m.binary('frieda')} (cargo build --release, or FRIEDA_BIN)")
    problems = m.command_problems(page)
    assert not problems, "\n".join(problems)


def test_the_readme_and_the_site_show_commands_at_all():
    """The command check has something to check: the README's quickstart and runbook commands."""
    found = [c for p in PAGES for s in m.segments(p.read_text()) if s.code and s.lang in m.SHELL_LANGS
             for c in m.commands(s.text)]
    assert any(prog == "frieda" and args[:1] == ["serve"] for prog, args in found), found
    assert sum(prog == "frieda" and args[:1] == ["admin"] for prog, args in found) >= 10, found


def test_each_check_catches_what_it_is_for(tmp_path):
    """A page with one dead link, one unknown anchor, one unknown option, one unknown subcommand,
    one missing script and one missing path: each check reports its own, and the good lines pass."""
    (tmp_path / "other.md").write_text("# Other page\n\n## A `quoted` heading: yes\n")
    page = tmp_path / "page.md"
    text = "\n".join([
        "# Page",
        "[good](other.md#a-quoted-heading-yes) [self](#page) [dead](missing.md) [anchor](other.md#nope)",
        "Run `scripts/no-such-script` and read `tests/no/such_file.py`; `scripts/test` exists.",
        "```bash",
        "frieda serve --config x.toml   # a comment --not-a-flag",
        "frieda serve --no-such-flag 1",
        "frieda admin topic frobnicate orders",
        "alias fa='frieda admin --bootstrap-server 127.0.0.1:9093'",
        "fa topic create t --partitions 2 \\",
        "  --replication-fctor 3",
        "cat > x.toml <<'EOF'",
        "frieda serve --inside-a-heredoc",
        "EOF",
        "```",
    ])
    links = m.link_problems(page, text)
    assert len(links) == 2 and "missing.md" in links[0] and "#nope" in links[1], links
    paths = m.path_problems(page, text)
    assert len(paths) == 2 and "scripts/no-such-script" in paths[0] and "tests/no/such_file.py" in paths[1], paths

    helps = {
        ("frieda", ()): "Commands:\n  serve  x\n  admin  y\n\nOptions:\n  -h, --help  Print help\n",
        ("frieda", ("serve",)): "Options:\n      --config <CONFIG>\n          c\n  -h, --help\n",
        ("frieda", ("admin",)): "Commands:\n  topic  t\n\nOptions:\n      --bootstrap-server <B>\n",
        ("frieda", ("admin", "topic")): "Commands:\n  create  c\n\nOptions:\n      --bootstrap-server <B>\n",
        ("frieda", ("admin", "topic", "create")): "Arguments:\n  <TOPIC>  t\n\nOptions:\n"
                                                  "      --partitions <P>\n      --replication-factor <R>\n",
    }
    cmds = m.command_problems(page, text, help_of=lambda prog, path: m.parse_help(helps[(prog, path)]))
    assert len(cmds) == 3, cmds
    assert "--no-such-flag" in cmds[0] and "'frobnicate'" in cmds[1] and "--replication-fctor" in cmds[2], cmds

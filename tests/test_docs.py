"""The docs have a path: every page reachable from docs/index.md, linked from the README, saying what it is for.

Also: no page holds a benchmark log (those live in benchmarks/RESULTS.md), user pages name only public
modules, docs/api.md lists exactly the public names of every public module, and docs/cli.md exactly the
options of every command and of the pytest plugin. Each rule is a function checked here against the
docs and against a small text it must reject, so a rule that stopped finding anything would fail too.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
from collections import deque
from pathlib import Path
from types import ModuleType

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
INDEX = DOCS / "index.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
# The contributors' page: it says at its top that it names private modules, which user pages must not.
CONTRIBUTORS = DOCS / "architecture.md"


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def doc_files() -> list[Path]:
    """Every file under docs/ a reader may be sent to (pages, examples, the schema, images)."""
    return sorted(p for p in DOCS.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.name.startswith("."))


# --- Markdown, read the way GitHub renders it ---------------------------------------------------------------

FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n.*?^\1[ \t]*$", flags=re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def without_code(text: str) -> str:
    """The text with fenced code blocks blanked (their lines kept, so line numbers stay)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for m in re.finditer(r"^#{1,6} (.+?)\s*#*$", without_code(path.read_text(encoding="utf-8")), flags=re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[Path, str]]:
    """(target file, fragment) of every relative link and image of a Markdown file, outside code."""
    found = []
    for target in LINK.findall(INLINE_CODE.sub("", without_code(path.read_text(encoding="utf-8")))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file, _, fragment = target.partition("#")
        found.append(((path.parent / file).resolve() if file else path.resolve(), fragment))
    return found


def reachable(start: Path, within: Path = DOCS) -> set[Path]:
    """Every file reached from ``start`` by following links from page to page, within a folder."""
    seen, todo = {start.resolve()}, deque([start.resolve()])
    while todo:
        page = todo.popleft()
        for target, _ in links(page):
            if target in seen or not target.is_relative_to(within.resolve()):
                continue
            seen.add(target)
            if target.suffix == ".md" and target.is_file():
                todo.append(target)
    return seen


def test_every_page_and_file_under_docs_is_reachable_from_the_index() -> None:
    reached = reachable(INDEX)
    missing = [str(p.relative_to(ROOT)) for p in doc_files() if p.resolve() not in reached]
    assert not missing, f"not reachable from docs/index.md by links: {missing}"


def test_reachability_follows_links_and_only_links(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nSee [b](b.md) and `[c](c.md)`.\n\n```\n[d](d.md)\n```\n")
    (tmp_path / "b.md").write_text("# B\n\n![e](img/e.png) and [a](a.md#a).\n")
    (tmp_path / "d.md").write_text("# D\n\nNobody links here.\n")
    assert {p.name for p in reachable(tmp_path / "a.md", tmp_path)} == {"a.md", "b.md", "e.png"}


def test_every_link_in_the_docs_and_the_readme_resolves() -> None:
    broken = []
    for page in [README, *pages()]:
        for target, fragment in links(page):
            where = f"{page.relative_to(ROOT)} -> {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif fragment and target.suffix == ".md" and fragment not in anchors(target):
                broken.append(f"{where}#{fragment}: no such heading")
    assert not broken, "\n".join(broken)


def test_anchors_are_githubs() -> None:
    assert slug("Quickstart: test your own agent") == "quickstart-test-your-own-agent"
    assert slug("Next to another plugin that owns `--chaos`") == "next-to-another-plugin-that-owns---chaos"
    assert slug("Policies (the model double)") == "policies-the-model-double"


# --- the README --------------------------------------------------------------------------------------------


def test_the_readme_links_the_index_and_every_page() -> None:
    linked = {target for target, _ in links(README)}
    missing = [str(p.relative_to(ROOT)) for p in pages() if p.resolve() not in linked]
    assert INDEX.resolve() in linked
    assert not missing, f"docs pages the README does not link: {missing}"


# --- no benchmark log in the docs --------------------------------------------------------------------------

EPOCH_DATE = "2026-01-01"  # the virtual clock's origin (toolchaos.fake_tools.retry.EPOCH): a fact, not a run's date

LOG_PATTERNS: dict[str, re.Pattern[str]] = {
    "a dated run": re.compile(r"\b20\d\d-\d\d-\d\d\b(?!T)"),
    "an issue number": re.compile(r"\bissues? #?\d+\b|\(#\d+\)", flags=re.I),
    "a pass of work": re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|next|"
                                 r"last|this|that|earlier|later) pass(?:es)?\b", flags=re.I),
    "a before/after table": re.compile(r"^\|(?=.*\|\s*before\b)(?=.*\|\s*after\b).*\|\s*$", flags=re.I | re.M),
    "the load it was measured under": re.compile(r"\bload average\b", flags=re.I),
    "a change's history": re.compile(r"\bparent commit\b|\bthis branch\b|\bthe branch's base\b", flags=re.I),
}


def log_findings(text: str) -> list[str]:
    """What in a page's prose belongs to a measurement log (code and inline code are left out)."""
    prose = INLINE_CODE.sub("", without_code(text))
    found = []
    for what, pattern in LOG_PATTERNS.items():
        for m in pattern.finditer(prose):
            if what == "a dated run" and m.group(0) == EPOCH_DATE:
                continue
            line = prose.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {what}: {m.group(0)!r}")
    return found


# Lines of the performance page as it was before its log moved to benchmarks/RESULTS.md.
OLD_PERFORMANCE_LINES = [
    "### Fuzzing: the fifth pass, bare choices",
    "On an idle machine of the same kind (2026-12-02), with the two changes below,",
    "### The wire as the history grows (issue 18, item 1)",
    "| figure | before | after | target | note |\n|---|---|---|---|---|",
    "### Measured (a shared 2-core machine, load average 5 to 18 throughout)",
    '"Before" is the parent commit measured by the same benchmark code in the same hour.',
    "From the previous pass: **a run left CPython's flag set**",
]
NOT_A_LOG = [
    "the virtual clock starts on 2026-01-01, so an HTTP-date is a wait",
    "| `started` | string | UTC, ISO 8601 to the second, e.g. `2026-01-02T03:04:05Z` |",
    "```\nincident-2026-01-12#0  40     1       98%     40x\n```",
    'dated: "2026-03"         # when you read these prices',
    "A pass is only as good as the faults the run met.",
    "| figure | what | about | command |",
]


@pytest.mark.parametrize("line", OLD_PERFORMANCE_LINES)
def test_a_log_line_is_found(line: str) -> None:
    assert log_findings(line), line


@pytest.mark.parametrize("line", NOT_A_LOG)
def test_what_is_not_a_log_is_left_alone(line: str) -> None:
    assert log_findings(line) == [], line


def test_the_benchmark_log_lives_in_the_benchmarks_results_file() -> None:
    kinds = {finding.split(": ")[1] for finding in log_findings(RESULTS.read_text(encoding="utf-8"))}
    assert {"a dated run", "an issue number", "a pass of work", "a before/after table"} <= kinds


def test_no_page_under_docs_holds_a_benchmark_log() -> None:
    found = {str(p.relative_to(ROOT)): log_findings(p.read_text(encoding="utf-8")) for p in pages()}
    assert not {k: v for k, v in found.items() if v}, (
        "measurement logs belong in benchmarks/RESULTS.md; a page states a figure with the command that "
        f"measures it: {found}")


# --- each page says what it is for, first -----------------------------------------------------------------


def lead_problem(text: str) -> str | None:
    """Why a page does not open with a sentence under its title (None when it does).

    The rule: the first line is the title (``# ...``); the first line after it that is not blank and not an
    HTML comment starts a paragraph of prose (not a heading, list, table, quote, image or code), whose first
    sentence, of eight words or more, ends within that paragraph.
    """
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        return "the first line is not the page's title (# ...)"
    rest = lines[1:]
    i = 0
    while i < len(rest) and (not rest[i].strip() or rest[i].lstrip().startswith("<!--")):
        i += 1
    if i == len(rest):
        return "nothing follows the title"
    if re.match(r" {4}|\t|\s*(#|>|\||!\[|```|~~~|[-*+] |\d+\. )", rest[i]) or not re.match(r"[A-Z`*\[\"]", rest[i]):
        return f"the line under the title is not prose: {rest[i]!r}"
    paragraph = []
    for line in rest[i:]:
        if not line.strip():
            break
        paragraph.append(line.strip())
    sentence = re.match(r"(.+?[.!?])(?:\s|$)", " ".join(paragraph))
    if sentence is None:
        return f"the first paragraph has no complete sentence: {' '.join(paragraph)!r}"
    if len(sentence.group(1).split()) < 8:
        return f"the first sentence is too short to say what the page is for: {sentence.group(1)!r}"
    return None


def test_every_page_opens_with_a_sentence_saying_what_it_is_for() -> None:
    problems = {str(p.relative_to(ROOT)): lead_problem(p.read_text(encoding="utf-8")) for p in pages()}
    assert not {k: v for k, v in problems.items() if v}, problems


@pytest.mark.parametrize("text", [
    "# Performance: figures, profile, findings\n\n    python benchmarks/run.py --json    # every figure\n",
    "# Scenarios\n\n## Fields\n\nA scenario has fields.\n",
    "# Scenarios\n\n| field | what |\n|---|---|\n",
    "# Scenarios\n\nSee below.\n",
    "# Scenarios\n\nThe fields of a scenario, as a list\n",
    "Scenario files\n\nThis page is the reference of scenario files: every field of one.\n",
])
def test_a_page_without_a_lead_sentence_is_found(text: str) -> None:
    assert lead_problem(text) is not None


def test_a_lead_sentence_passes() -> None:
    assert lead_problem("# X\n\n<!-- generated -->\n\nThis page lists every option of the command line, one\n"
                        "line each. More follows.\n") is None


# --- user pages name only public modules -------------------------------------------------------------------

PRIVATE_MODULE = re.compile(
    r"\btoolchaos(?:\.[A-Za-z]\w*)*\._[A-Za-z]\w*"  # toolchaos._internal..., toolchaos.wire._server
    r"|\b(?:harness|fake_tools|toolchaos)/(?:[\w.]+/)*_[a-z]\w*"  # harness/_agents/guarded.py, toolchaos/_agents/
    r"|\bfake_tools(?:\.\w+)*\._[a-z]\w*"  # fake_tools._seeded
    r"|(?<![\w/.])_[a-z]\w*\.py\b")  # a private module's file, `_classes.py`


def private_names(text: str) -> list[str]:
    return PRIVATE_MODULE.findall(text)


def test_user_pages_name_no_private_module() -> None:
    found = {str(p.relative_to(ROOT)): private_names(p.read_text(encoding="utf-8"))
             for p in [README, *pages()] if p != CONTRIBUTORS}
    assert not {k: v for k, v in found.items() if v}, (
        f"user pages must name public modules only (docs/architecture.md, for contributors, may): {found}")


IMPORT_PATH = re.compile(r"\b(?:toolchaos|fake_tools)(?:\.[A-Za-z]\w*)*\._[A-Za-z]\w*")  # what one would import


def test_no_page_names_a_private_module_as_something_to_import() -> None:
    # The contributors' page may point at the source's private folders and files, but no page,
    # that one included, spells a private module the way an import statement would.
    found = {str(p.relative_to(ROOT)): IMPORT_PATH.findall(p.read_text(encoding="utf-8")) for p in [README, *pages()]}
    assert not {k: v for k, v in found.items() if v}, found
    assert IMPORT_PATH.findall("`toolchaos._engine`, `toolchaos.wire._server`, `fake_tools._seeded`, "
                               "`harness/_engine/`, `toolchaos.events`") == [
        "toolchaos._engine", "toolchaos.wire._server", "fake_tools._seeded"]


def test_private_module_names_are_found_and_public_ones_are_not() -> None:
    text = ("`toolchaos._plumbing.children.sealing_available()`, `harness/_agents/_presets.py`, `toolchaos/_agents/`"
            ", `fake_tools._seeded`, `toolchaos.wire._server`, (`_classes.py`)")
    assert len(private_names(text)) == 6
    assert private_names("`toolchaos.wire.session`, `tests/_internal/test_store.py`, `os._exit`, `__init__.py`, "
                         "`harness/__init__.py`, `toolchaos.fake_tools.retry`") == []


def test_the_contributors_page_says_it_names_private_modules() -> None:
    lead = CONTRIBUTORS.read_text(encoding="utf-8").split("\n\n")[1]
    assert "contributors" in lead and "private" in lead


# --- docs/api.md: exactly the public names ------------------------------------------------------------------

API = DOCS / "api.md"
OTHER_MODULES = "Other public modules"


def public_module_names() -> list[str]:
    """Every module of the package whose dotted name has no part starting with ``_``."""
    import toolchaos
    import toolchaos.fake_tools

    names = {"toolchaos", "toolchaos.fake_tools"}
    for pkg in (toolchaos, toolchaos.fake_tools):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".", onerror=lambda name: None):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.add(info.name)
    return sorted(names)


def import_public(name: str) -> ModuleType | None:
    """The module, or None when an optional extra it needs is not installed (a broken import of ours fails)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] == "toolchaos":
            raise
        return None


def api_sections() -> dict[str, list[str]]:
    """docs/api.md: each ``## `module``` heading (or the other modules') and the names its entries list."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in without_code(API.read_text(encoding="utf-8")).splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            current = sections.setdefault(title.strip("`") if title.startswith("`") else title, [])
        elif line.startswith("- `") and current is not None:
            entry = re.match(r"- `([\w.]+)`: \S", line)
            assert entry, f"docs/api.md: an entry is '- `name`: what it is': {line!r}"
            current.append(entry.group(1))
    return sections


def test_api_page_lists_exactly_the_public_names_of_every_public_module() -> None:
    sections = api_sections()
    others = sections.pop(OTHER_MODULES, None)
    assert others is not None, f"docs/api.md has no '## {OTHER_MODULES}' section"
    with_all, without_all, skipped = {}, [], []
    for name in public_module_names():
        mod = import_public(name)
        if mod is None:
            skipped.append(name)
        elif hasattr(mod, "__all__"):
            with_all[name] = list(mod.__all__)
        else:
            without_all.append(name)
    documented = {k: v for k, v in sections.items() if k not in skipped}
    assert sorted(documented) == sorted(with_all), "a `## `module`` section per public module with an __all__"
    for name, names in with_all.items():
        assert len(documented[name]) == len(set(documented[name])), f"{name}: a name listed twice"
        assert sorted(documented[name]) == sorted(names), (
            f"{name}: missing {sorted(set(names) - set(documented[name]))}, "
            f"not public {sorted(set(documented[name]) - set(names))}")
    assert sorted(set(others) - set(skipped)) == sorted(without_all), "the public modules without an __all__"


def test_the_api_check_finds_a_name_missing_and_a_private_one_listed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    text = API.read_text(encoding="utf-8")
    for broken in (text.replace("- `fake_tool`: ", "- `_fake_tool`: ", 1),
                   text.replace("## `toolchaos.kinds`\n", "## `toolchaos.kinds`\n\n- `_registry`: private.\n", 1),
                   text.replace("## `toolchaos.serve`", "## `toolchaos._engine`", 1)):
        assert broken != text
        (tmp_path / "api.md").write_text(broken, encoding="utf-8")
        monkeypatch.setitem(globals(), "API", tmp_path / "api.md")  # api_sections() reads the page named here
        with pytest.raises(AssertionError):
            test_api_page_lists_exactly_the_public_names_of_every_public_module()


# --- docs/cli.md: exactly the options ------------------------------------------------------------------------

CLI = DOCS / "cli.md"


def cli_sections() -> dict[str, set[str]]:
    """docs/cli.md: each section's title and the option strings its entries name (before their ': ')."""
    sections: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in without_code(CLI.read_text(encoding="utf-8")).splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), set())
        elif line.startswith("- ") and current is not None and ": " in line:
            head = line[2:].split("`: ", 1)[0]
            current.update(re.findall(r"`(--?[a-z][\w-]*|chaos_\w+)", head))
    return sections


def command_options() -> dict[str, set[str]]:
    from toolchaos.cli import COMMANDS

    options = {}
    for name, command in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"toolchaos {name}")
        command.add_arguments(parser)
        options[name] = {s for action in parser._actions for s in action.option_strings} - {"-h", "--help"}
    return options


def test_cli_page_lists_every_command_and_exactly_its_options() -> None:
    sections = cli_sections()
    options = command_options()
    assert {t for t in sections if t.startswith("`toolchaos ")} == {f"`toolchaos {name}`" for name in options}
    for name, wanted in options.items():
        listed = sections[f"`toolchaos {name}`"]
        assert listed == wanted, (f"toolchaos {name}: missing {sorted(wanted - listed)}, "
                                  f"not options {sorted(listed - wanted)}")


def test_cli_page_lists_exactly_the_pytest_options_and_ini_names(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    group = help_text.split("chaos tests for agent tool loops (toolchaos):\n", 1)[1].split("\n\n", 1)[0]
    flags = set(re.findall(r"^  (--[\w-]+)", group, flags=re.M))
    inis = set(re.findall(r"^  (chaos_\w+) \(", help_text, flags=re.M))
    assert "--chaos" in flags and "chaos_agent" in inis
    sections = cli_sections()
    assert sections["pytest options"] == flags, (sorted(flags - sections["pytest options"]),
                                                 sorted(sections["pytest options"] - flags))
    assert sections["pytest ini options"] == inis, (sorted(inis - sections["pytest ini options"]),
                                                    sorted(sections["pytest ini options"] - inis))

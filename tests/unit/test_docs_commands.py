"""Every make target, `ballast` command and flag, and `python -m` module and flag that README.md
and docs/*.md name exists: the docs stay true to the code they tell people to run."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from ballast.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code(text: str) -> list[str]:
    """Inline code spans and the lines of fenced blocks (continued lines joined)."""
    spans, fenced, block = [], False, []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            block.append(line)
            continue
        spans += re.findall(r"`([^`\n]+)`", line)
    joined = "\n".join(block).replace("\\\n", " ")
    return spans + joined.splitlines()


def words(span: str) -> list[str]:
    try:
        tokens = shlex.split(span, comments=False)
    except ValueError:
        tokens = span.split()
    return [t.strip("[]()") for t in tokens]


def targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"(?m)^([A-Za-z][\w.-]*):", text))


def parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Each (sub)command's parser by its path: () for `ballast`, ("sandbox", "up"), ..."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk((*path, name), sub)

    walk((), build_parser())
    return found


def mentions() -> list[tuple[str, str, str]]:
    """(doc, kind, words) for every make, ballast and python -m invocation in the docs."""
    out = []
    for doc in DOCS:
        for span in code(doc.read_text()):
            tokens = words(span.strip().removeprefix("$ "))
            for i, token in enumerate(tokens):
                rest = tokens[i + 1 :]
                if token == "make" and rest and re.fullmatch(r"[a-z][\w-]*", rest[0]):
                    out.append((doc.name, "make", rest[0]))
                elif (
                    token.endswith("ballast")
                    and token in ("ballast", ".venv/bin/ballast")
                    and (i == 0 or tokens[i - 1] == "kubectl")
                ):
                    out.append((doc.name, "ballast", " ".join(rest)))
                elif token == "-m" and i and tokens[i - 1].endswith("python") and rest:
                    out.append((doc.name, "python", " ".join(rest)))
    return out


MENTIONS = mentions()


def test_the_docs_name_commands_at_all():
    kinds = {kind for _, kind, _ in MENTIONS}
    assert kinds == {"make", "ballast", "python"}, kinds
    assert len(MENTIONS) > 50


@pytest.mark.parametrize("doc,target", sorted({(d, w) for d, k, w in MENTIONS if k == "make"}))
def test_make_targets_exist(doc, target):
    assert target in targets(), f"{doc}: `make {target}` is no Makefile target"


def flags(tokens: list[str]) -> list[str]:
    return [t.split("=")[0] for t in tokens if re.fullmatch(r"--[a-z][\w-]*(=.*)?", t)]


def ballast_problem(invocation: str, known: dict) -> str | None:
    tokens = words(invocation)
    path: tuple[str, ...] = ()
    while tokens and (*path, tokens[0]) in known:
        path, tokens = (*path, tokens[0]), tokens[1:]
    if not path:
        return f"`ballast {invocation}` names no ballast command"
    options = {s for a in known[path]._actions for s in a.option_strings}
    missing = [f for f in flags(tokens) if f not in options]
    return f"`ballast {' '.join(path)}` has no {missing}" if missing else None


# The entry point on its own, or a placeholder for any command.
BALLAST = sorted({(d, w) for d, k, w in MENTIONS if k == "ballast" and w and w[0] != "<"})


@pytest.mark.parametrize("doc,invocation", BALLAST)
def test_ballast_commands_and_flags_exist(doc, invocation):
    problem = ballast_problem(invocation, parsers())
    assert problem is None, f"{doc}: {problem}"


def test_a_wrong_command_or_flag_is_caught():
    known = parsers()
    assert ballast_problem("sandbox up --nodes 3", known) is None
    assert "--nodez" in ballast_problem("sandbox up --nodez 3", known)
    assert "no ballast command" in ballast_problem("sandbx up", known)
    assert python_problem("bench.watcher --nodes 500") is None
    assert "--nodez" in python_problem("bench.watcher --nodez 500")
    assert "targets" not in targets() and "image" in targets()


def python_problem(invocation: str) -> str | None:
    module, *rest = words(invocation)
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return f"no module {module}"
    source = Path(spec.origin)
    if source.name == "__init__.py" and (source.parent / "__main__.py").exists():
        source = source.parent / "__main__.py"
    text = source.read_text()
    if source.name == "__main__.py":  # a package's command may hand over to a module beside it
        for name in re.findall(rf"^from ({re.escape(module)}\.\w+) import", text, re.M):
            text += Path(importlib.util.find_spec(name).origin).read_text()
    missing = [f for f in flags(rest) if f'"{f}"' not in text]
    return f"`python -m {module}` has no {missing}" if missing else None


PYTHON = sorted({(d, w) for d, k, w in MENTIONS if k == "python"})


@pytest.mark.parametrize("doc,invocation", PYTHON)
def test_python_modules_and_flags_exist(doc, invocation):
    problem = python_problem(invocation)
    assert problem is None, f"{doc}: {problem}"

"""The folders show the flow: each stage imports only from stages before it.

Read from the source with `ast`, so a lazy import inside a function counts as
much as one at the top: it is the same dependency, only later.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
# Flow order. `atomicio` is the one shared module every stage may use; `cache`
# (work counters, the on-disk cache) comes before every stage that does the work.
STAGES = ("atomicio", "cache", "family", "gate", "measure", "items", "score", "site")
HOOK_MODULE = "hooks"


def module_name(path: Path, root: Path = PLUGINS.parent) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def plugin_imports(path: Path, root: Path = PLUGINS.parent) -> list[tuple[int, str]]:
    """(line, imported module) for every import of a plugins module, at any depth."""
    me = module_name(path, root).split(".")
    package = me if path.name == "__init__.py" else me[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "plugins"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "plugins":
                continue
            # `from plugins.items import options` imports the submodule plugins.items.options
            for a in node.names:
                sub = f"{base}.{a.name}"
                as_path = root / sub.replace(".", "/")
                found.append((node.lineno, sub if as_path.with_suffix(".py").is_file() or as_path.is_dir() else base))
    return found


MODULES = sorted(p for p in PLUGINS.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_sits_in_a_stage():
    stray = [module_name(p) for p in MODULES if module_name(p) != "plugins" and stage_of(module_name(p)) is None]
    assert not stray, f"modules outside the stage packages {STAGES[1:]} (move each into the stage it serves): {stray}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_only_from_earlier_stages(path: Path):
    me = module_name(path)
    mine = STAGES.index(stage_of(me)) if stage_of(me) else -1
    late = [
        f"{me} (stage {stage_of(me)}) imports {other} (stage {stage_of(other)}, later in the flow) at line {line}"
        for line, other in plugin_imports(path)
        if stage_of(other) is not None and STAGES.index(stage_of(other)) > mine
    ]
    assert not late, "\n".join(late)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_logic_modules_do_not_import_pytest(path: Path):
    if path.stem == HOOK_MODULE:
        return
    tree = ast.parse(path.read_text(), str(path))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    bad = sorted({n for n in names if n.split(".")[0] in ("pytest", "_pytest")})
    assert not bad, f"{module_name(path)} is a logic module but imports {bad}; move the pytest part into its stage's hooks.py"


def import_graph() -> dict[str, set[str]]:
    known = {module_name(p) for p in MODULES}
    graph: dict[str, set[str]] = {}
    for p in MODULES:
        me = module_name(p)
        graph[me] = {m for _, m in plugin_imports(p) if m in known and m != me}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_catch_what_they_claim(tmp_path):
    """The detectors on a made-up graph and a made-up module: a check that cannot fail is no check."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    (tmp_path / "plugins" / "family").mkdir(parents=True)
    (tmp_path / "plugins" / "family" / "manifest.py").write_text("")
    src = tmp_path / "plugins" / "family" / "probe.py"
    src.write_text("from plugins.score.tally import Score\nfrom . import manifest\n")
    imports = plugin_imports(src, tmp_path)
    assert imports == [(1, "plugins.score.tally"), (2, "plugins.family.manifest")]

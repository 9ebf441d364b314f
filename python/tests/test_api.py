"""The Python API is the engine's: every option of its schema (asked of the engine itself) is a keyword of
``ec.open`` and ``ClipDataset`` with the engine's default, one line of their docstrings and a row of
docs/python.md; every code the client raises stands in the engine's tables and in the reference."""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import typing
from pathlib import Path
from typing import Any, Dict, List

import pytest

import ec
import ec.torch
from conftest import ROOT, node

DOCS = ROOT / "docs" / "python.md"
SIGNATURES = {"ec.open": ec.open, "ec.torch.ClipDataset": ec.torch.ClipDataset.__init__}


@pytest.fixture(scope="module")
def engine() -> Dict[str, Any]:
    """What the engine says of its API (engine_schema.mjs): open()'s options, a clip, its error codes, dtypes."""
    out = subprocess.run([node(), str(ROOT / "python" / "tests" / "engine_schema.mjs"), str(ROOT)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)


def python_default(prop: Dict[str, Any]) -> Any:
    """The default a Python keyword must have: the engine's, or None where the engine's is no constant (``defaultFrom``)."""
    return None if "defaultFrom" in prop or "default" not in prop else prop["default"]


def expected_options(engine: Dict[str, Any]) -> Dict[str, Any]:
    return {snake(k): python_default(v) for k, v in engine["options"]["properties"].items()}


def docs_rows() -> Dict[str, List[str]]:
    """The option table of docs/python.md: name → its other cells (type, default, what it does)."""
    text = DOCS.read_text()
    table = text[text.index("<!-- options -->") : text.index("<!-- /options -->")]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def args_lines(doc: str) -> Dict[str, str]:
    """The ``Args:`` section of a docstring: name → its line."""
    section = doc[doc.index("Args:") :].split("\n\n")[0]
    out = {}
    for line in section.splitlines()[1:]:
        m = re.match(r"\s+(\w+): (.+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_every_engine_option_is_a_typed_keyword_with_the_engines_default(engine, name):
    params = inspect.signature(SIGNATURES[name]).parameters
    keywords = {n: p for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    want = expected_options(engine)
    assert sorted(keywords) == sorted(want)
    hints = typing.get_type_hints(SIGNATURES[name])
    for option, default in want.items():
        assert keywords[option].default == default, f"{name}({option}=...)"
        assert option in hints, f"{name}({option}) has no type"
    positional = [n for n, p in params.items() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional[-1] == "url"


def test_each_option_has_one_line_in_both_docstrings(engine):
    lines = {name: args_lines(inspect.getdoc(fn) or "") for name, fn in SIGNATURES.items()}
    want = set(expected_options(engine)) | {"url"}
    assert set(lines["ec.open"]) == want
    assert lines["ec.torch.ClipDataset"] == lines["ec.open"]
    for section in ("Returns:", "Raises:"):
        assert section in (ec.open.__doc__ or "")


def test_docs_python_md_has_every_option_with_its_default(engine):
    rows = docs_rows()
    want = expected_options(engine)
    assert sorted(rows) == sorted(want)
    for option, default in want.items():
        cell = rows[option][1].strip("`")
        assert ast.literal_eval(cell) == default, f"docs/python.md: {option} default {cell}"


def test_docs_python_md_names_every_public_name_and_method():
    text = DOCS.read_text()
    names = list(ec.__all__) + list(ec.torch.__all__)
    for cls in (ec.Dataset, ec.Batch, ec.torch.ClipDataset):
        names += [m for m in vars(cls) if not m.startswith("_")]
    missing = [n for n in names if not re.search(rf"\b{re.escape(n)}\b", text)]
    assert missing == []


def test_every_code_the_client_raises_is_in_the_engines_tables_and_the_docs(engine):
    source = "\n".join(p.read_text() for p in (ROOT / "python" / "src" / "ec").glob("*.py"))
    raised = set(re.findall(r'"(ERR_[A-Z0-9_]+)"', source))
    for code in ("ERR_ENGINE_MISMATCH", "ERR_ENGINE_PROTOCOL"):
        raised.add(code)
    assert raised - set(engine["codes"]) == set()
    text = DOCS.read_text()
    assert [c for c in sorted(raised) if c not in text] == []


def test_a_clip_is_the_engines_clip_info(engine):
    schema = engine["clip"]
    assert set(ec.Clip.__required_keys__) == set(schema["required"])
    assert set(ec.Clip.__optional_keys__) == set(schema["properties"]) - set(schema["required"])
    source = schema["properties"]["source"]
    assert set(ec.ClipSource.__required_keys__) == set(source["required"]) == set(source["properties"])


def test_the_client_accepts_the_engines_dtypes_only(engine):
    from ec import _protocol

    assert _protocol.DTYPES == engine["dtypes"]


def test_py_typed_marks_the_package_typed():
    assert (Path(ec.__file__).parent / "py.typed").is_file()
    assert "py.typed" in (ROOT / "python" / "pyproject.toml").read_text()

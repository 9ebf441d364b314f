"""The client and the engine it starts speak one wire: another engine is refused, naming both versions."""

from __future__ import annotations

import re

import pytest

import ec
from ec import _engine
from conftest import ROOT


def test_the_client_speaks_the_engines_protocol_version():
    ts = re.search(r"PROTOCOL_VERSION = (\d+)", (ROOT / "sdk" / "bridge" / "protocol.ts").read_text())
    assert ts is not None
    assert _engine.PROTOCOL_VERSION == int(ts.group(1))


def test_an_engine_of_another_protocol_is_refused_naming_both(videos, monkeypatch):
    # A client of a later release (protocol 999) meets this checkout's engine.
    theirs = _engine.PROTOCOL_VERSION
    monkeypatch.setattr(_engine, "PROTOCOL_VERSION", 999)
    with pytest.raises(ec.Error) as caught:
        ec.open(str(videos), frames=4, size=(32, 32), batch=2)
    assert caught.value.code == "ERR_ENGINE_MISMATCH"
    assert re.search(rf"speaking protocol 999\b.* speaks protocol {theirs}\b", str(caught.value)), str(caught.value)

"""A bucket's own table of more pages than one window of the order, opened through the engine:
read lazily by default, so the clip count is not known at open (``len()`` says why) and the
epoch still delivers every clip once (a real local S3 server, a table written by the real codec)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import ec
from conftest import ROOT, node

HERE = Path(__file__).resolve().parent
COPIES = 2


@pytest.fixture(scope="module")
def bucket(videos: Path) -> Iterator[Dict[str, str]]:
    """The local S3 server, the videos under lazy/ (each COPIES times) and their table, one object a page."""
    proc = subprocess.Popen([node(), str(HERE / "s3_server.mjs"), str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the S3 server exited before it listened"
        s3 = json.loads(line)
        seeded = subprocess.run(
            [node(), str(HERE / "lazy_table.mjs"), str(ROOT), line.strip(), str(videos), "lazy", str(COPIES)],
            check=True, capture_output=True, text=True,
        )
        table = json.loads(seeded.stdout)
        # More pages than one window of the order (4): read lazily.
        assert table["pages"] == table["objects"] == 3 * COPIES
        yield s3
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def clips(ds: ec.Dataset) -> List[str]:
    return [f"{c['key'].split('/')[-1].split('-', 1)[-1]}@{c['start']}" for b in ds for c in b.clips]


def test_a_lazily_read_table_has_no_len_and_streams_every_clip_once(bucket, videos, tmp_path, monkeypatch):
    monkeypatch.setenv("EC_INDEX_CACHE_DIR", str(tmp_path / "index-cache"))
    credentials = {"access_key_id": bucket["access_key_id"], "secret_access_key": bucket["secret_access_key"]}
    opts = dict(frames=8, size=(32, 32), batch=4, device="cpu", seed=2)
    with ec.open(f"s3://{bucket['bucket']}/lazy", endpoint=bucket["endpoint"], region=bucket["region"],
                 force_path_style=True, credentials=credentials, **opts) as ds:
        assert ds.clip_count is None
        with pytest.raises(TypeError, match="clip count is not known until its epoch ends"):
            len(ds)
        got = clips(ds)
    # The same videos as a folder, each COPIES times: planned whole, its count known at open.
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in os.listdir(videos):
        for c in range(COPIES):
            shutil.copy(videos / name, folder / f"{c}-{name}")
    with ec.open(str(folder), **opts) as whole:
        assert len(whole) > 0
        want = clips(whole)
    assert len(got) == len(want)
    assert sorted(got) == sorted(want)

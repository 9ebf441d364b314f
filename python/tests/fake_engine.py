"""A stand-in for ``ec engine`` that speaks its JSON-lines protocol and sends what a test scripts, so the
client can be shown messages the real engine never sends. EC_FAKE (JSON): ``slots`` (files in the ring),
``capacity`` (bytes of each file), ``opened`` (fields over the real-looking event), ``batch`` (the one batch
event sent after ``mapped``). Usage: python fake_engine.py engine"""

from __future__ import annotations

import json
import os
import sys


def send(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    script = json.loads(os.environ["EC_FAKE"])
    paths = []
    ds = 0
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "open":
            ds = req["ds"]
            for i in range(script.get("slots", 2)):
                path = os.path.join(req["dir"], f"ec-fake-{os.getpid()}-{i}")
                with open(path, "wb") as f:
                    f.truncate(script.get("capacity", 4096))
                paths.append(path)
            opened = {"event": "opened", "protocol": 2, "clips": 2, "total": 2, "slots": [{"path": p, "capacity": 0} for p in paths]}
            send({**opened, **script.get("opened", {}), "ds": ds})
        elif op == "mapped":
            for p in paths:
                os.unlink(p)
            send({**script["batch"], "ds": ds})
        elif op in ("state", "stats"):
            send({"event": "reply", "id": req["id"], "value": {}})
        elif op == "close":
            return


if __name__ == "__main__":
    main()

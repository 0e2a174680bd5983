#!/usr/bin/env python3
"""Where a Redis server's time goes, by script and by key family.

Redis counts its time per command (INFO commandstats) but every Lua script is one
command there, EVALSHA. This samples the server's own command log instead: for a few
seconds it logs every command with its duration (SLOWLOG with a threshold of 0), then
restores the log's settings and adds up the calls made by clients (not the commands a
script runs inside itself, which the log also holds, from the client "?:0"), grouped by
what they are:

- a script by the name of its Lua file, found by its SHA1 among the repository's scripts
  (services/*/src/**/*.lua; matchmaking's with their prelude, as its stores load them);
- any other command by its name and its key with the ids taken out
  (`HMGET P:{gs:#}:room:U:state`).

    python3 scripts/redis_profile.py --port 6379 --seconds 5     # sample a live server
    python3 scripts/redis_profile.py --json saved.json [--seconds S]  # a SLOWLOG GET saved with redis-cli --json, logged for S s
    python3 scripts/redis_profile.py --self-test

The log itself costs the server time while it records every command (a few µs a
command on a 2-core machine): the µs a call it prints are for comparing calls within one
sample, and the calls a second are exact. Python 3.11, standard library only; the
sampling needs `redis-cli`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import subprocess
import sys
import time
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Stores whose scripts are their file with a prelude in front (`Script::new(prelude + "\n"
# + body)`: services/matchmaking/src/store/redis/{lobby,queue}.rs).
PRELUDED = ("lobby", "queue")
# The client a script's own commands are logged under.
SCRIPT_CLIENT = "?:0"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NUMBER = re.compile(r"\d+")


def script_names(root: pathlib.Path = ROOT) -> dict[str, str]:
    """SHA1 of each script as the services load it -> its path under services/."""
    names = {}
    for path in sorted(root.glob("services/*/src/**/*.lua")):
        body = path.read_text()
        if path.parent.name in PRELUDED and path.name != "prelude.lua":
            body = (path.parent / "prelude.lua").read_text() + "\n" + body
        sha = hashlib.sha1(body.encode()).hexdigest()
        names[sha] = str(path.relative_to(root / "services"))
    return names


def family(key: str) -> str:
    """A key with its ids taken out: uuids as U, numbers as #."""
    return NUMBER.sub("#", UUID.sub("U", key))


def group(args: list[str], names: dict[str, str]) -> str:
    """What a logged call is: its script, or its command and key family."""
    command = args[0].upper()
    if command in ("EVALSHA", "EVALSHA_RO") and len(args) > 1:
        return "script " + names.get(args[1].lower(), args[1][:12])
    return command + (" " + family(args[1]) if len(args) > 1 else "")


def profile(entries: list, names: dict[str, str]) -> tuple[list[tuple[str, int, int]], float]:
    """The clients' calls by group: (group, calls, µs), the most time first; and the
    seconds the entries span (the log's stamps are whole seconds: a saved log's rates
    are approximate)."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    stamps = []
    for entry in entries:
        _id, stamp, micros, args = entry[:4]
        client = entry[4] if len(entry) > 4 else ""
        stamps.append(stamp)
        if client == SCRIPT_CLIENT or not args:
            continue
        row = totals[group(args, names)]
        row[0] += 1
        row[1] += micros
    rows = sorted(((g, c, us) for g, (c, us) in totals.items()), key=lambda r: -r[2])
    span = (max(stamps) - min(stamps) + 1) if stamps else 0
    return rows, float(span)


def report(rows: list[tuple[str, int, int]], seconds: float, top: int) -> str:
    total = sum(us for _, _, us in rows) or 1
    lines = [
        f"{total / 1e6:.3f} s of commands in {seconds:.0f} s "
        f"({total / 1e6 / max(seconds, 1):.3f} of a core, the log's own cost included)",
        f"{'share':>6} {'calls/s':>9} {'µs/call':>8}  what",
    ]
    for name, calls, us in rows[:top]:
        lines.append(
            f"{100 * us / total:5.1f}% {calls / max(seconds, 1):9.1f} {us / calls:8.1f}  {name}"
        )
    return "\n".join(lines)


def cli(port: int, *args: str) -> str:
    out = subprocess.run(
        ["redis-cli", "-p", str(port), *args], check=True, capture_output=True
    )
    return out.stdout.decode("utf-8", "replace")


def sample(port: int, seconds: float) -> tuple[list, float]:
    """Every command for about `seconds`, from the server's command log (its settings
    restored), and the seconds it logged."""
    before = cli(port, "CONFIG", "GET", "slowlog-*").split()
    settings = dict(zip(before[::2], before[1::2]))
    cli(port, "CONFIG", "SET", "slowlog-max-len", "5000000")
    cli(port, "SLOWLOG", "RESET")
    cli(port, "CONFIG", "SET", "slowlog-log-slower-than", "0")
    started = time.monotonic()
    try:
        time.sleep(seconds)
    finally:
        cli(port, "CONFIG", "SET", "slowlog-log-slower-than",
            settings.get("slowlog-log-slower-than", "10000"))
    logged = time.monotonic() - started
    entries = json.loads(cli(port, "--json", "SLOWLOG", "GET", "5000000"))
    cli(port, "SLOWLOG", "RESET")
    cli(port, "CONFIG", "SET", "slowlog-max-len", settings.get("slowlog-max-len", "128"))
    return entries, logged


def self_test() -> None:
    names = script_names()
    assert any(n.endswith("game-session/src/store/lua/play.lua") for n in names.values()), names
    queue_form = [s for s, n in names.items() if n.endswith("queue/form.lua")]
    assert queue_form, "matchmaking's queue scripts are named"
    play = next(s for s, n in names.items() if n.endswith("store/lua/play.lua"))
    entries = [
        [3, 100, 50, ["EVALSHA", play.upper(), "1", "P:{gs:3}:room:01a25188-9013-77f9-a3c2-5d2865ca80f6:"], "127.0.0.1:5", ""],
        [2, 100, 6, ["HINCRBY", "P:{gs:3}:room:01a25188-9013-77f9-a3c2-5d2865ca80f6:state", "v", "1"], SCRIPT_CLIENT, ""],
        [1, 101, 30, ["EVALSHA", play, "1", "P:{gs:4}:room:x:"], "127.0.0.1:6", ""],
        [0, 102, 8, ["HMGET", "P:{gs:12}:room:01a25188-7fa2-74cc-8713-2b38c0a5ea3d:state", "v"], "127.0.0.1:7", ""],
    ]
    rows, seconds = profile(entries, names)
    assert seconds == 3.0, seconds
    assert rows[0] == ("script game-session/src/store/lua/play.lua", 2, 80), rows
    assert rows[1] == ("HMGET P:{gs:#}:room:U:state", 1, 8), rows
    assert len(rows) == 2, "a script's own commands are not counted again"
    assert group(["EVALSHA", "ffff", "0"], {}) == "script ffff"
    assert report(rows, seconds, 5).splitlines()[2].split()[1:3] == ["0.7", "40.0"]
    print("redis_profile self-test: ok")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="sample the Redis on 127.0.0.1:PORT")
    parser.add_argument(
        "--seconds", type=float,
        help="how long to sample (default 5); with --json, how long the saved log ran "
        "(default: the span of its whole-second stamps)")
    parser.add_argument("--json", help="a saved SLOWLOG GET (redis-cli --json)")
    parser.add_argument("--save", help="also save the sampled log here")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0
    logged = None
    if args.json:
        entries = json.loads(pathlib.Path(args.json).read_bytes().decode("utf-8", "replace"))
    elif args.port:
        entries, logged = sample(args.port, args.seconds or 5.0)
        if args.save:
            pathlib.Path(args.save).write_text(json.dumps(entries))
    else:
        parser.error("--port or --json")
    rows, seconds = profile(entries, script_names())
    seconds = logged or args.seconds or seconds
    print(report(rows, seconds, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())

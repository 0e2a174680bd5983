#!/usr/bin/env python3
"""The capacity model calibrated on whole-system runs (issue 49).

scripts/capacity_model.py predicts from costs measured one service at a time; the
whole-system runs (`capacity`, tests/capacity) showed those costs miss by 1.8-6.7x and
that a process's CPU is not proportional to its load: each player costs less as the load
rises (more work per wake-up, per socket write, per Redis round trip). This script fits,
per process, a cost curve to the runs marked "fit" in RUNS:

    cores of one replica = a * (plays a second through that replica) ^ b

by least squares on the logarithms, and checks it against the runs marked "check" (never
used for the fit): the prediction must be within 25 % of what was measured. From the
curves it derives what an operator sizes with: plays a second, and players present, that
one replica of each service carries at a CPU quota, at the full quota and at the HPAs'
70 %.

The load is counted in the simulated players' own plays a second (the report's "play →
own card_played" rate), whatever the process: in the simulator's workload every other
rate (sign-ins, matches, reads, presence) is proportional to it.

    python3 scripts/capacity_fit.py                       # the fit, the checks, players per pod
    python3 scripts/capacity_fit.py --markdown --quota 1 --quota 2
    python3 scripts/capacity_fit.py --self-test

Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace

from capacity_model import Checks, table  # the same tables and self-test checks

# The process groups of the capacity report, and whether a run has several replicas of it
# (the fit is per replica: replicas share the load evenly, players spread by connection).
PROCESSES = ("game-session", "matchmaking", "accounts", "Redis", "PostgreSQL", "simulator")

# The prediction must be this close to the measurement (issue 49: "within 25 %").
TOLERANCE = 0.25
# A curve is not used further than this multiple of the largest load it was fitted on
# (plays a second through one replica): past it, a figure prints as "> the limit".
EXTRAPOLATION_LIMIT = 4.0
# The HPAs' CPU target (deploy/k8s/overlays/prod/autoscaling.yaml: averageUtilization 70).
HPA_CPU_TARGET = 0.70


@dataclass(frozen=True)
class Run:
    """One whole-system run: its mean figures over the measured window."""

    label: str
    command: str
    use: str  # "fit", "check", or "" (shown only)
    present: float  # players present, mean over the window
    plays_per_s: float  # the simulated players' own plays a second ("play → own card_played")
    replicas: dict  # process -> replicas (1 when not listed)
    cores: dict  # process -> mean cores over the window, all its replicas together (absent: not measured)

    def replicas_of(self, process: str) -> int:
        return self.replicas.get(process, 1)


LONG_FORM = "capacity --bin-dir target/release --session-s 1200 --connections 400"

# Runs in release on a quiet machine; docs/performance.md "Whole system" has each run's
# full report. Cores are CPU seconds over the window, from the report's "CPU s" column.
# The curves are fitted on runs at steady state: 22 minutes, measured after 12, when the
# first matches have ended and the first tokens been renewed (a two-player match lasts
# about 10 minutes, a token is renewed after 10). The 7.5-minute runs of the first round
# ended a third of the steady state's matches and renewed no token: accounts and
# PostgreSQL, whose work follows a match, came out 1.5-2x low; they are shown, not fitted.
# The fit is the three steady-state runs of 7 Dec evening, the build with the split room's
# refresh (a replica brings the room it holds up to the other replica's plain plays
# instead of reading it whole): one line through three sizes, since on a shared machine
# one run of three can sit 15 % off the others for every process, the simulator too
# (docs/performance.md). The 6 Dec runs, the build before on another machine, are shown.
WINDOW = "--seconds 1320 --warmup 720 --ramp-s 150"
STEADY = f"--games 2 {WINDOW}"
RUNS = [
    Run(
        label="5,228 present, 22 minutes (7 Dec 21:09)",
        command=f"{LONG_FORM} --players 3300 {STEADY}",
        use="fit",
        present=5_228,
        plays_per_s=538.6,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.1653, "matchmaking": 0.0303, "accounts": 0.0612, "Redis": 0.1377,
               "PostgreSQL": 0.0493, "simulator": 0.0918},
    ),
    Run(
        label="10,455 present, 22 minutes (7 Dec 20:47)",
        command=f"{LONG_FORM} --players 6600 {STEADY}",
        use="fit",
        present=10_455,
        plays_per_s=1079.1,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.3180, "matchmaking": 0.0573, "accounts": 0.1420, "Redis": 0.2590,
               "PostgreSQL": 0.1165, "simulator": 0.1683},
    ),
    Run(
        label="13,716 present, 22 minutes (7 Dec 21:31)",
        command=f"{LONG_FORM} --players 8600 {STEADY}",
        use="fit",
        present=13_716,
        plays_per_s=1416.7,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.3298, "matchmaking": 0.0542, "accounts": 0.1403, "Redis": 0.2583,
               "PostgreSQL": 0.1285, "simulator": 0.1780},
    ),
    # The build before (7ef9f37: no split-room refresh) right after them: a check of the
    # processes that build did not change (its game-session and Redis are in
    # docs/performance.md, 0.338 and 0.278 core).
    Run(
        label="13,548 present, 22 minutes (7 Dec 22:01, the build before: the unchanged processes)",
        command=f"{LONG_FORM} --players 8600 {STEADY}",
        use="check",
        present=13_548,
        plays_per_s=1401.1,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"matchmaking": 0.0532, "accounts": 0.1368, "PostgreSQL": 0.1228, "simulator": 0.1690},
    ),
    # 20,000 present (8 Dec), 1.46x the largest fitted load: three game-session replicas
    # (the admission limit is 10,000 streams a replica) and Redis's AOF synced every
    # second, as deploy's dev overlay runs it, where the fitted runs synced every write.
    # Redis is left out of the check for that (0.238 core, 0.65x the curve's `always`;
    # 0.73x the next run's, which synced every write).
    Run(
        label="20,053 present, 22 minutes (8 Dec 00:20, 3 game-session replicas, Redis everysec)",
        command=f"{LONG_FORM} --players 12700 --games 3 {WINDOW} --redis-fsync everysec",
        use="check",
        present=20_053,
        plays_per_s=2078.1,
        replicas={"game-session": 3, "matchmaking": 2},
        cores={"game-session": 0.4605, "matchmaking": 0.0593, "accounts": 0.1770,
               "PostgreSQL": 0.1778, "simulator": 0.2218},
    ),
    # The same right after with Redis syncing every write, as the fitted runs: Redis in
    # the check too.
    Run(
        label="20,088 present, 22 minutes (8 Dec 00:49, 3 game-session replicas, Redis always)",
        command=f"{LONG_FORM} --players 12700 --games 3 {WINDOW} --redis-fsync always",
        use="check",
        present=20_088,
        plays_per_s=2071.7,
        replicas={"game-session": 3, "matchmaking": 2},
        cores={"game-session": 0.4803, "matchmaking": 0.0707, "accounts": 0.2030, "Redis": 0.3262,
               "PostgreSQL": 0.1918, "simulator": 0.2222},
    ),
    Run(
        label="5,259 present, 22 minutes (6 Dec 23:03, the build before, another machine)",
        command=f"{LONG_FORM} --players 3300 {STEADY}",
        use="",
        present=5_259,
        plays_per_s=542.2,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.2593, "matchmaking": 0.0387, "accounts": 0.0728, "Redis": 0.2070,
               "PostgreSQL": 0.0612, "simulator": 0.1197},
    ),
    Run(
        label="10,349 present, 22 minutes (6 Dec 23:25, the build before, another machine)",
        command=f"{LONG_FORM} --players 6600 {STEADY}",
        use="",
        present=10_349,
        plays_per_s=1068.7,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.3758, "matchmaking": 0.0500, "accounts": 0.1168, "Redis": 0.2955,
               "PostgreSQL": 0.1088, "simulator": 0.1688},
    ),
    Run(
        label="13,578 present, 30 minutes (6 Dec 22:41, the soak; the build before, another machine)",
        command=f"{LONG_FORM} --players 8600 --games 2 --seconds 2100 --warmup 300 --ramp-s 240",
        use="",
        present=13_578,
        plays_per_s=1401.2,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.4585, "matchmaking": 0.0652, "accounts": 0.1636, "Redis": 0.3645,
               "PostgreSQL": 0.1474, "simulator": 0.2034},
    ),
    Run(
        label="2,469 present (6 Dec 18:59; 7.5 minutes, before the steady state)",
        command=f"{LONG_FORM} --players 1650 --games 2 --seconds 450 --warmup 150 --ramp-s 150",
        use="",
        present=2_469,
        plays_per_s=261.1,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.1427, "matchmaking": 0.0253, "accounts": 0.0313, "Redis": 0.1237,
               "PostgreSQL": 0.0180, "simulator": 0.0723},
    ),
    Run(
        label="4,936 present (6 Dec 19:06; 7.5 minutes, before the steady state)",
        command=f"{LONG_FORM} --players 3300 --games 2 --seconds 450 --warmup 150 --ramp-s 150",
        use="",
        present=4_936,
        plays_per_s=524.2,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.2130, "matchmaking": 0.0287, "accounts": 0.0473, "Redis": 0.1750,
               "PostgreSQL": 0.0303, "simulator": 0.0963},
    ),
    Run(
        label="9,875 present (6 Dec 19:14; 7.5 minutes, before the steady state)",
        command=f"{LONG_FORM} --players 6600 --games 2 --seconds 450 --warmup 150 --ramp-s 150",
        use="",
        present=9_875,
        plays_per_s=1045.1,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.3850, "matchmaking": 0.0447, "accounts": 0.0937, "Redis": 0.2990,
               "PostgreSQL": 0.0673, "simulator": 0.1677},
    ),
    Run(
        label="13,773 present, 30 minutes (6 Dec 19:29, the first soak)",
        command=f"{LONG_FORM} --players 8600 --games 2 --seconds 2100 --warmup 300 --ramp-s 240",
        use="",
        present=13_773,
        plays_per_s=1426.5,
        replicas={"game-session": 2, "matchmaking": 2},
        # PostgreSQL not measured: its backends were replaced during the 30 minutes and the
        # report counted only the live ones (tests/capacity/procs.rs counts both now).
        cores={"game-session": 0.4749, "matchmaking": 0.0726, "accounts": 0.1704, "Redis": 0.3777,
               "simulator": 0.2109},
    ),
    Run(
        label="9,386 present (6 Dec 16:51, an earlier machine)",
        command=f"{LONG_FORM} --players 6730 --games 2 --seconds 480 --warmup 120 --ramp-s 240",
        use="",
        present=9_386,
        plays_per_s=979,
        replicas={"game-session": 2, "matchmaking": 2},
        cores={"game-session": 0.38, "matchmaking": 0.06, "accounts": 0.16, "Redis": 0.26,
               "PostgreSQL": 0.12, "simulator": 0.17},
    ),
    Run(
        label="19,672 present (6 Dec 16:28, an earlier machine; the 2 cores full)",
        command=f"{LONG_FORM} --players 13461 --games 3 --seconds 720 --warmup 120 --ramp-s 300",
        use="",
        present=19_672,
        plays_per_s=2_030,
        replicas={"game-session": 3, "matchmaking": 2},
        cores={"game-session": 0.53, "matchmaking": 0.08, "accounts": 0.24, "Redis": 0.34,
               "PostgreSQL": 0.20, "simulator": 0.22},
    ),
]


@dataclass(frozen=True)
class Curve:
    """cores of one replica = a * x^b, x = plays a second through it."""

    a: float
    b: float

    def cores(self, x: float) -> float:
        return self.a * x**self.b

    def plays_at(self, cores: float) -> float:
        """The plays a second at which one replica uses `cores`."""
        return (cores / self.a) ** (1.0 / self.b)


def fit(points: list) -> Curve:
    """Least squares of log y = log a + b log x over (x, y) points (at least two distinct x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    n = len(points)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 2 or sxx <= 0:
        raise ValueError("a curve needs runs at two or more loads")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return Curve(math.exp(my - b * mx), b)


def per_replica(run: Run, process: str) -> tuple:
    """(plays a second, cores) of one replica of `process` in `run`."""
    n = run.replicas_of(process)
    return run.plays_per_s / n, run.cores[process] / n


def curves(runs: list) -> dict:
    """A curve per process from the runs marked fit."""
    fitted = [r for r in runs if r.use == "fit"]
    return {p: fit([per_replica(r, p) for r in fitted]) for p in PROCESSES}


def predict(curve: Curve, run: Run, process: str) -> float:
    """Cores of all of `process`'s replicas in `run`, from its curve."""
    x, _ = per_replica(run, process)
    return run.replicas_of(process) * curve.cores(x)


def fitted_range(runs: list, process: str) -> float:
    """The largest plays a second through one replica of `process` in the fitted runs."""
    return max(per_replica(r, process)[0] for r in runs if r.use == "fit")


def plays_per_player(runs: list) -> float:
    """Plays a second per player present in the fitted runs (the workload's, not a cost)."""
    fitted = [r for r in runs if r.use == "fit"]
    return sum(r.plays_per_s for r in fitted) / sum(r.present for r in fitted)


# ---------------------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodRun:
    """A run with the game-session replicas each confined to a CPU quota (`--game-quota`)."""

    label: str
    command: str
    replicas: int
    quota: float  # cores a replica
    present: float  # players present, mean over the window
    plays_per_s: float  # the simulated players' own plays a second, all replicas
    game_cores: float  # mean cores of all game-session replicas together
    throttled: int  # periods throttled, all replicas, whole run


# At or above this share of its quota a replica is taken as saturated: it used its whole
# quota, and its plays a second are what the quota holds.
SATURATED = 0.97

# The 6 Dec run of the build before (another machine: its replica used 0.229 core for the
# plays that took 0.139 here) is in docs/performance.md; it checked the curves before these.
POD_RUNS = [
    PodRun(
        label="one replica at 0.25 core, long form (7 Dec 21:38)",
        command=f"{LONG_FORM} --players 3600 --games 1 --game-quota 0.25 --seconds 450 --warmup 150 --ramp-s 150",
        replicas=1,
        quota=0.25,
        present=5_356,
        plays_per_s=568.1,
        game_cores=0.1393,
        throttled=10,
    ),
]


def saturated(run: PodRun) -> bool:
    """Whether the run's replicas used their whole quota."""
    return run.game_cores / run.replicas >= SATURATED * run.quota


def pod_check(curve: Curve, run: PodRun) -> tuple:
    """(what is compared, predicted, measured) for one quota run: a saturated replica's
    plays a second against the curve's plays at the quota, else its cores against the
    curve's cores at its plays."""
    x = run.plays_per_s / run.replicas
    if saturated(run):
        return "plays/s a replica carries at its quota", curve.plays_at(run.quota), x
    return "cores of a replica", curve.cores(x), run.game_cores / run.replicas


def players_at_quota(curve: Curve, run: PodRun) -> float:
    """Players present one replica carries at its quota, from a quota run: what it carried
    when saturated, else its share scaled to the quota along the curve's exponent."""
    share = run.present / run.replicas
    if saturated(run):
        return share
    return share * (run.quota * run.replicas / run.game_cores) ** (1.0 / curve.b)


def report(runs: list, quotas: list, markdown: bool, pod_runs: list = (), per_replica_players: float = 10_000) -> tuple:
    """The report's text and whether every check is within the tolerance."""
    c = curves(runs)
    ppp = plays_per_player(runs)
    out = []
    out.append(table(
        ["run", "use", "present", "plays/s"] + list(PROCESSES),
        [[r.label, r.use or "—", f"{r.present:,.0f}", f"{r.plays_per_s:,.0f}"]
         + [(f"{r.cores[p]:.2f}" if p in r.cores else "—") + (f" ({r.replicas_of(p)})" if r.replicas_of(p) > 1 else "") for p in PROCESSES]
         for r in runs],
        markdown,
    ))
    out.append("")
    out.append(table(
        ["process", "cores of a replica = a · (plays/s through it)^b", "a", "b", "µs of CPU a play at 100 plays/s → at 1,000"],
        [[p, f"{c[p].a:.3g} · x^{c[p].b:.3f}", f"{c[p].a:.3g}", f"{c[p].b:.3f}",
          f"{c[p].cores(100) / 100 * 1e6:.0f} → {c[p].cores(1000) / 1000 * 1e6:.0f}"] for p in PROCESSES],
        markdown,
    ))
    out.append("")
    ok = True
    rows = []
    for r in runs:
        if r.use == "fit":
            continue
        for p in PROCESSES:
            if p not in r.cores:
                continue
            predicted = predict(c[p], r, p)
            ratio = r.cores[p] / predicted
            within = abs(ratio - 1) <= TOLERANCE
            if r.use == "check":
                ok &= within or p == "simulator"
            rows.append([r.label, p, f"{predicted:.3f}", f"{r.cores[p]:.2f}", f"{ratio:.2f}",
                         ("yes" if within else "**no**" if markdown else "NO") if r.use == "check" else "(not a check)"])
    if rows:
        out.append(table(["run not fitted", "process", "predicted cores", "measured", "measured ÷ predicted",
                          f"within {TOLERANCE:.0%}"], rows, markdown))
        out.append("")
    rows = []
    for r in pod_runs:
        what, predicted, measured = pod_check(c["game-session"], r)
        ratio = measured / predicted
        within = abs(ratio - 1) <= TOLERANCE
        ok &= within
        carried = players_at_quota(c["game-session"], r)
        rows.append([r.label, f"{r.replicas} × {r.quota:g}", f"{r.present:,.0f}", f"{r.plays_per_s:,.0f}", r.throttled, what,
                     f"{predicted:,.3g}", f"{measured:,.3g}", f"{ratio:.2f}", "yes" if within else "**no**" if markdown else "NO",
                     f"{c['game-session'].plays_at(r.quota) / ppp:,.0f} / {carried:,.0f}"])
    if rows:
        out.append(table(["pod-sized run", "replicas × quota", "present", "plays/s", "periods throttled", "compared",
                          "predicted", "measured", "measured ÷ predicted", f"within {TOLERANCE:.0%}",
                          "players a replica carries at its quota: predicted / from the run"], rows, markdown))
        out.append("")
    rows = []
    for q in quotas:
        for p in ("game-session", "matchmaking", "accounts"):
            limit = EXTRAPOLATION_LIMIT * fitted_range(runs, p)

            def shown(plays: float, per: float) -> str:
                return f"{plays / per:,.0f}" if plays <= limit else f"> {limit / per:,.0f}"

            full, hpa = c[p].plays_at(q), c[p].plays_at(q * HPA_CPU_TARGET)
            rows.append([f"{q:g}", p, f"{shown(full, 1)} / {shown(hpa, 1)}", f"{shown(full, ppp)} / {shown(hpa, ppp)}"])
    out.append(table(["quota (cores)", "a replica of", "plays/s at the full quota / at 70 %",
                      f"players present ({ppp:.3f} plays/s each) at the full quota / at 70 %"], rows, markdown))
    rows = []
    for p in ("game-session", "matchmaking", "accounts", "Redis", "PostgreSQL"):
        limit = EXTRAPOLATION_LIMIT * fitted_range(runs, p)
        x = per_replica_players * ppp
        rows.append([p, f"{x:,.0f}", f"{c[p].cores(x):.3f}" if x <= limit else "past the fitted range"])
    out.append("")
    out.append(table([f"one replica (one instance) carrying {per_replica_players:,.0f} players present", "plays/s", "cores"], rows, markdown))
    out.append(f"\n(> N: more than N, the most a curve is used for: {EXTRAPOLATION_LIMIT:g}× the largest load it was fitted on.)")
    return "\n".join(out), ok


# ---------------------------------------------------------------------------------------
# Self-test.
# ---------------------------------------------------------------------------------------


def self_test() -> None:
    check = Checks()

    truth = Curve(0.002, 0.7)
    got = fit([(x, truth.cores(x)) for x in (50.0, 200.0, 800.0)])
    check("the fit recovers a power law exactly", abs(got.a / truth.a - 1) < 1e-9 and abs(got.b - truth.b) < 1e-9,
          f"(a {got.a:.6g}, b {got.b:.6f})")
    noisy = fit([(100.0, 0.2 * 1.1), (400.0, 0.8 / 1.1), (1600.0, 3.2 * 1.1)])
    check("a linear cost with ±10 % noise fits with b near 1", 0.9 < noisy.b < 1.1, f"(b {noisy.b:.3f})")
    check("plays_at inverts cores", abs(truth.plays_at(truth.cores(321.0)) - 321.0) < 1e-6)
    try:
        fit([(100.0, 0.1), (100.0, 0.2)])
        check("one load alone is refused", False)
    except ValueError:
        check("one load alone is refused", True)
    # Replicas: two replicas at half the plays each cost what the curve says twice.
    run = Run("t", "", "check", 1000, 400, {"game-session": 2}, {p: 0.1 for p in PROCESSES})
    check("a run's prediction is replicas × the curve at its share", abs(predict(truth, run, "game-session") - 2 * truth.cores(200)) < 1e-12)
    # The checks: a run the curves predict passes, one 30 % off fails.
    base = [Run(f"f{x}", "", "fit", x * 10, x, {"game-session": 2}, {p: truth.cores(x) * (2 if p == "game-session" else 1) for p in PROCESSES})
            for x in (100.0, 300.0, 900.0)]
    good = Run("good", "", "check", 6000, 600, {"game-session": 2},
               {p: truth.cores(600) * (2 if p == "game-session" else 1) * 1.1 for p in PROCESSES})
    bad = Run("bad", "", "check", 6000, 600, {"game-session": 2},
              {p: truth.cores(600) * (2 if p == "game-session" else 1) * (1.3 if p == "Redis" else 1) for p in PROCESSES})
    check("a check within 25 % passes", report(base + [good], [1.0], False)[1])
    unmeasured = replace(good, cores={p: v for p, v in good.cores.items() if p != "PostgreSQL"})
    check("a process a check did not measure is left out of it", report(base + [unmeasured], [1.0], False)[1])
    check("a check 30 % off fails", not report(base + [bad], [1.0], False)[1])
    check("plays per player: the fitted runs' plays ÷ present", abs(plays_per_player(base) - 0.1) < 1e-12)
    check("the fitted range is the largest load through one replica", fitted_range(base, "game-session") == 450.0 and fitted_range(base, "Redis") == 900.0)
    check("a pod figure past the fitted range prints as a bound", "> 18,000" in report(base, [1e6], False)[0])
    # Quota runs: a saturated replica is judged by the plays it carried, else by its cores.
    full = PodRun("full", "", 1, 0.25, 1000, truth.plays_at(0.25) * 1.2, 0.245, 900)
    part = PodRun("part", "", 4, 0.25, 1000, 400.0, 4 * truth.cores(100.0) * 1.1, 0)
    what, predicted, measured = pod_check(truth, full)
    check("a saturated replica is compared by plays at its quota", what.startswith("plays") and abs(measured / predicted - 1.2) < 1e-9)
    what, predicted, measured = pod_check(truth, part)
    check("an unsaturated replica is compared by its cores", what.startswith("cores") and abs(measured / predicted - 1.1) < 1e-9)
    check("an unsaturated run's players at the quota scale along the curve",
          abs(players_at_quota(truth, PodRun("p", "", 1, 0.25, 1000, 100.0, truth.cores(100.0), 0)) / 1000 - (0.25 / truth.cores(100.0)) ** (1 / 0.7)) < 1e-9)
    check("a quota run 30 % off fails the report", not report(base, [1.0], False, [replace(full, plays_per_s=truth.plays_at(0.25) * 1.3)])[1])
    check.finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quota", type=float, action="append", help="a replica's CPU quota in cores (repeatable; default 1 and 2)")
    ap.add_argument("--players-per-replica", type=float, default=10_000, help="the load at which to show each process's cores (default: the game-session HPA's 10,000 streams)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables (docs/scaling.md)")
    ap.add_argument("--self-test", action="store_true", help="check the fit's arithmetic")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    text, ok = report(RUNS, args.quota or [1.0, 2.0], args.markdown, POD_RUNS, args.players_per_replica)
    print(text)
    if not ok:
        print(f"\na check run is more than {TOLERANCE:.0%} from its prediction")
        sys.exit(1)


if __name__ == "__main__":
    main()

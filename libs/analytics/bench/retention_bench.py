#!/usr/bin/env python3
"""The retention SQL at scale: docs/analytics/retention.sql (and daily_active_players.sql)
in DuckDB over a generated export of PLAYERS players and about MATCHES matches.

    python3 libs/analytics/bench/retention_bench.py [--players 1000000] [--matches 5000000]
        [--dir /tmp/basra-retention-bench] [--runs 3]

The corpus is generated at the SQL level, in DuckDB, in the export's layout
(`players/players.parquet`, `match_players/date=…/…parquet`): only the columns the
retention queries read (and a few more), with the habits of `simulate --fast`'s returning
players (libs/records/src/corpus.rs: a quarter there on the first of 60 days, the rest
arriving uniformly; half drift away within days, a third play now and then, the rest stay),
each active player-day holding 1 or 2 seats so that the seats make about MATCHES two-seat
matches. Then each query runs RUNS times in a fresh connection (wall time each), and once
under EXPLAIN ANALYZE, whose heaviest operators (CPU seconds over DuckDB's threads, and
their output rows) are printed.
"""

import argparse
import json
import pathlib
import shutil
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[3]
DAYS = 60


def generate(directory: pathlib.Path, players: int, matches: int) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "players").mkdir(parents=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        f"""
        CREATE TABLE people AS
        SELECT i,
               -- a UUID-shaped key, as the export's
               regexp_replace(md5(i::VARCHAR), '^(.{{8}})(.{{4}})(.{{4}})(.{{4}})(.{{12}})$',
                              '\\1-\\2-\\3-\\4-\\5') AS user_id,
               CASE WHEN hash(i, 1) % 100 < 25 THEN 0 ELSE hash(i, 2) % {DAYS} END AS first_day,
               CASE WHEN hash(i, 3) % 100 < 50 THEN 0
                    WHEN hash(i, 3) % 100 < 85 THEN 1 ELSE 2 END AS habit
        FROM range({players}) t(i)
        """
    )
    # The chance of playing k days after the first (corpus.rs's HABITS).
    chance = """CASE habit
        WHEN 0 THEN 0.20 * exp(-(k - 1) / 2.0)
        WHEN 1 THEN 0.15 + 0.25 * exp(-(k - 1) / 4.0)
        ELSE 0.60 + 0.30 * exp(-(k - 1) / 7.0) END"""
    con.execute(
        f"""
        CREATE TABLE active AS
        SELECT p.i, p.user_id, p.first_day + k AS day
        FROM people p, range(0, {DAYS}) r(k)
        WHERE p.first_day + k < {DAYS}
          AND (k = 0 OR (hash(p.i, k, 7) % 1000000) / 1e6 < {chance})
        """
    )
    player_days = con.execute("SELECT count(*) FROM active").fetchone()[0]
    # Seats per player-day (1 or 2) so that the seats make about `matches` two-seat matches.
    extra = max(0.0, min(1.0, 2 * matches / player_days - 1))
    con.execute(
        f"""
        CREATE TABLE seats AS
        SELECT a.user_id, a.day, s.n
        FROM active a, range(2) s(n)
        WHERE s.n = 0 OR (hash(a.i, a.day, 9) % 1000) / 1000.0 < {extra}
        """
    )
    con.execute(
        f"""
        COPY (
            SELECT CAST((row_number() OVER () + 1) // 2 AS VARCHAR) AS match_id,
                   (row_number() OVER ()) % 2 AS seat,
                   user_id,
                   FALSE AS is_bot,
                   'queue' AS seat_fill,
                   2.0 + hash(user_id, day, n) % 28 AS queue_wait_seconds,
                   TIMESTAMPTZ '2026-09-01 00:00:00+00' + to_days(day::INTEGER)
                       + to_seconds((hash(user_id, day, n, 1) % 86400)::BIGINT) AS ended_at,
                   DATE '2026-09-01' + day::INTEGER AS date
            FROM seats
        ) TO '{directory / "match_players"}' (FORMAT parquet, PARTITION_BY (date))
        """
    )
    con.execute(
        f"""
        COPY (
            SELECT p.user_id,
                   TIMESTAMPTZ '2026-09-01 00:00:00+00' + to_days(p.first_day::INTEGER)
                       + to_seconds((hash(p.i, 5) % 86400)::BIGINT) AS signed_up_at,
                   CASE WHEN hash(p.i, 6) % 100 < 70 THEN 'guest' ELSE 'username' END AS kind,
                   m.first_match_at, m.last_match_at,
                   coalesce(m.matches, 0)::INTEGER AS matches_played,
                   FALSE AS deleted
            FROM people p
            LEFT JOIN (
                SELECT user_id,
                       TIMESTAMPTZ '2026-09-01 00:00:00+00' + to_days(min(day)::INTEGER) AS first_match_at,
                       TIMESTAMPTZ '2026-09-01 00:00:00+00' + to_days(max(day)::INTEGER) AS last_match_at,
                       count(*) AS matches
                FROM seats GROUP BY user_id
            ) m USING (user_id)
        ) TO '{directory / "players" / "players.parquet"}' (FORMAT parquet)
        """
    )
    seats = con.execute("SELECT count(*) FROM seats").fetchone()[0]
    print(
        f"corpus: {players} players, {player_days} active player-days, {seats} seats "
        f"= {seats // 2} two-seat matches over {DAYS} days in {directory}"
    )
    con.close()


def run(directory: pathlib.Path, file: str, runs: int) -> None:
    sql = (ROOT / "docs" / "analytics" / file).read_text().replace(
        "/tmp/basra-export", str(directory)
    )
    times = []
    for _ in range(runs):
        con = duckdb.connect()
        started = time.perf_counter()
        for statement in con.extract_statements(sql):
            result = con.execute(statement)
            if statement.type == duckdb.StatementType.SELECT:
                rows = result.fetchall()
        times.append(time.perf_counter() - started)
        con.close()
    print(
        f"{file}: {len(rows)} rows; wall {', '.join(f'{t:.2f}' for t in times)} s "
        f"(min {min(times):.2f}, max {max(times):.2f})"
    )
    con = duckdb.connect()
    for statement in con.extract_statements(sql):
        if statement.type != duckdb.StatementType.SELECT:
            con.execute(statement)
            continue
        plan = json.loads(
            con.execute("EXPLAIN (ANALYZE, FORMAT json) " + statement.query).fetchall()[0][1]
        )
        operators = []

        def walk(node: dict) -> None:
            if node.get("timing", 0) > 0:
                rows = node.get("intermediate_rows", 0)
                operators.append((node["timing"], node.get("name", "?"), rows))
            for child in node.get("children", []):
                walk(child)

        for node in plan.get("operator", plan.get("children", [])):
            walk(node)
        operators.sort(reverse=True)
        heavy = ", ".join(
            f"{name} {seconds:.2f}s ({rows:,} rows)" for seconds, name, rows in operators[:4]
        )
        print(f"  heaviest operators: {heavy}")
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--matches", type=int, default=5_000_000)
    parser.add_argument("--dir", default="/tmp/basra-retention-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-generate", action="store_true")
    args = parser.parse_args()
    directory = pathlib.Path(args.dir)
    if not args.skip_generate:
        started = time.perf_counter()
        generate(directory, args.players, args.matches)
        print(f"generated in {time.perf_counter() - started:.1f}s")
    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"DuckDB {duckdb.__version__}, {threads} threads")
    for file in ["retention.sql", "daily_active_players.sql"]:
        run(directory, file, args.runs)


if __name__ == "__main__":
    main()

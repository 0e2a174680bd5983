#!/usr/bin/env python3
"""Writes the Grafana dashboards of deploy/grafana/ (overview.json and one per service)
from the panels listed here: `python3 deploy/grafana/dashboards.py` after a change;
`python3 deploy/grafana/dashboards.py --check` (run by `make k8s-check`) fails when a
committed file differs from what this script writes.

Every query reads the labels Prometheus gives the services' series (scrape.yaml:
`namespace`, `pod`, `service`) and the metrics' own (`grpc_service`, `grpc_method`,
`grpc_code`, …). tests/it/prometheus.rs evaluates every `expr` of every dashboard
against a real Prometheus after a bot match and requires data from each.
"""

from __future__ import annotations

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent

# Status codes that mean the server failed (not the caller): the error ratio's numerator.
SERVER_ERRORS = "UNKNOWN|INTERNAL|UNAVAILABLE|DATA_LOSS|DEADLINE_EXCEEDED"

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def error_ratio(by: str, match: str = "") -> str:
    """Server errors / all calls by `by`; 0 (not nothing) where no call failed."""
    sep = "," if match else ""
    errors = f'basra_grpc_server_handled_total{{{match}{sep}grpc_code=~"{SERVER_ERRORS}"}}'
    every = f"basra_grpc_server_handled_total{{{match}}}"
    return (
        f"(sum by ({by}) (rate({errors}[5m]))"
        f" or sum by ({by}) (rate({every}[5m])) * 0)"
        f" / sum by ({by}) (rate({every}[5m]))"
    )


def quantile(q: float, histogram: str, by: str, match: str = "") -> str:
    by = f"{by}, le" if by else "le"
    return f"histogram_quantile({q}, sum by ({by}) (rate({histogram}_bucket{{{match}}}[5m])))"


def panel(title: str, targets: list[tuple[str, str]], unit: str = "short",
          kind: str = "timeseries", description: str = "") -> dict:
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}}
        if kind == "timeseries"
        else {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value"},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
             "datasource": DATASOURCE}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def stat(title: str, expr: str, unit: str = "short", description: str = "") -> dict:
    return panel(title, [(expr, title)], unit, "stat", description)


def dashboard(uid: str, title: str, panels: list[dict], links: bool = True) -> dict:
    x = y = 0
    row_height = 0
    laid = []
    for i, p in enumerate(panels, start=1):
        width = 4 if p["type"] == "stat" else 12
        height = 4 if p["type"] == "stat" else 8
        if x + width > 24:
            x, y = 0, y + row_height
            row_height = 0
        laid.append({"id": i, "gridPos": {"h": height, "w": width, "x": x, "y": y}, **p})
        x += width
        row_height = max(row_height, height)
    return {
        "uid": uid,
        "title": title,
        "tags": ["basra"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "links": [
            {"type": "dashboards", "tags": ["basra"], "asDropdown": True, "title": "Basra"}
        ]
        if links
        else [],
        "templating": {
            "list": [
                {"name": "datasource", "label": "Data source", "type": "datasource",
                 "query": "prometheus", "current": {}, "hide": 0}
            ]
        },
        "panels": laid,
    }


def red(service: str) -> list[dict]:
    """The RED and process panels of one service (its pods' `service` label)."""
    s = f'service="{service}"'
    return [
        panel("Requests per second, by method and code",
              [(f"sum by (grpc_method, grpc_code) (rate(basra_grpc_server_handled_total{{{s}}}[1m]))",
                "{{grpc_method}} {{grpc_code}}")], "reqps"),
        panel("Server error ratio, by method",
              [(error_ratio("grpc_method", s), "{{grpc_method}}")], "percentunit",
              description=f"Calls ending {SERVER_ERRORS} over all calls."),
        panel("Latency of unary calls, by method",
              [(quantile(0.5, "basra_grpc_server_handling_seconds", "grpc_method", s), "p50 {{grpc_method}}"),
               (quantile(0.99, "basra_grpc_server_handling_seconds", "grpc_method", s), "p99 {{grpc_method}}")],
              "s"),
        panel("Streams open, by method",
              [(f"sum by (grpc_method) (basra_grpc_server_streams_open{{{s}}})", "{{grpc_method}}")]),
        panel("Stream messages per second, by method",
              [(f"sum by (grpc_method) (rate(basra_grpc_server_msg_received_total{{{s}}}[1m]))", "in {{grpc_method}}"),
               (f"sum by (grpc_method) (rate(basra_grpc_server_msg_sent_total{{{s}}}[1m]))", "out {{grpc_method}}")],
              "short"),
        panel("Stream duration p90, by method",
              [(quantile(0.9, "basra_grpc_server_stream_seconds", "grpc_method", s), "{{grpc_method}}")], "s"),
        panel("CPU, by pod",
              [(f"sum by (pod) (rate(process_cpu_seconds_total{{{s}}}[1m]))", "{{pod}}")], "percentunit",
              description="CPU seconds per second: 1 is one core."),
        panel("Resident memory, by pod",
              [(f"sum by (pod) (process_resident_memory_bytes{{{s}}})", "{{pod}}")], "bytes"),
        panel("Open file descriptors, by pod",
              [(f"sum by (pod) (process_open_fds{{{s}}})", "open {{pod}}"),
               (f"sum by (pod) (process_max_fds{{{s}}})", "limit {{pod}}")]),
        panel("Threads and tasks, by pod",
              [(f"sum by (pod) (process_threads{{{s}}})", "threads {{pod}}"),
               (f"sum by (pod) (basra_tokio_alive_tasks{{{s}}})", "tasks {{pod}}")]),
    ]


def overview() -> dict:
    return dashboard("basra-overview", "Basra online: overview", [
        stat("Players online", "sum(basra_accounts_feeds_open)",
             description="Apps open: friends' feeds (WatchFriends) held open."),
        stat("Players at a table", "sum(basra_game_open_streams)",
             description="Play streams open on all game-session pods."),
        stat("Matches running", "sum(basra_game_rooms_watched)",
             description="Rooms with a player connected (a room whose players are on two pods counts on each)."),
        stat("Plays per second", "sum(rate(basra_game_plays_total[1m]))", "ops"),
        stat("Queue length", "sum(basra_matchmaking_queue_waiting)",
             description="Tickets waiting, all formats."),
        stat("Sign-ins per second", "sum(rate(basra_accounts_sign_ins_total[1m]))", "ops"),
        panel("Time to a match",
              [(quantile(0.5, "basra_matchmaking_wait_seconds", ""), "p50"),
               (quantile(0.9, "basra_matchmaking_wait_seconds", ""), "p90")], "s"),
        panel("Sign-ins per second, by kind",
              [("sum by (kind) (rate(basra_accounts_sign_ins_total[1m]))", "{{kind}}")], "ops"),
        panel("Server error ratio, by service",
              [(error_ratio("service"), "{{service}}")], "percentunit",
              description=f"Calls ending {SERVER_ERRORS} over all calls; the alert BasraRpcErrors fires above 5 %."),
        panel("Requests per second, by service",
              [("sum by (service) (rate(basra_grpc_server_handled_total[1m]))", "{{service}}")], "reqps"),
        panel("p99 latency, by method (unary calls)",
              [(quantile(0.99, "basra_grpc_server_handling_seconds", "grpc_service, grpc_method"),
                "{{grpc_service}}/{{grpc_method}}")], "s",
              description="The alert BasraRpcSlow fires above 0.5 s."),
        panel("Pods up, by service", [("sum by (service) (up)", "{{service}}")]),
        panel("Game-session pods and their streams",
              [("sum by (pod) (basra_game_open_streams)", "{{pod}}"),
               ("max(basra_game_max_streams)", "most per pod")],
              description="The autoscaler adds pods when the average passes its target."),
        panel("Streams open, by method",
              [("sum by (grpc_service, grpc_method) (basra_grpc_server_streams_open)",
                "{{grpc_service}}/{{grpc_method}}")]),
    ])


def accounts() -> dict:
    return dashboard("basra-accounts", "Basra online: accounts", red("accounts") + [
        panel("Sign-ins per second, by kind and result",
              [("sum by (kind, result) (rate(basra_accounts_sign_ins_total[1m]))", "{{kind}} {{result}}")], "ops"),
        panel("RecordMatch per second, by result",
              [("sum by (result) (rate(basra_accounts_record_match_total[1m]))", "{{result}}")], "ops"),
        panel("Match records: latency",
              [(quantile(0.99, "basra_grpc_server_handling_seconds", "grpc_method",
                         'service="accounts",grpc_method=~"RecordMatch|RecordMatches"'), "p99 {{grpc_method}}")],
              "s", description="game-session's outbox records in batches (RecordMatches)."),
        panel("Database pool, by pod",
              [("sum by (pod, state) (basra_accounts_db_connections)", "{{pod}} {{state}}"),
               ("max(basra_accounts_db_max_connections)", "most")]),
        panel("Friends' feeds open, by pod", [("sum by (pod) (basra_accounts_feeds_open)", "{{pod}}")]),
        panel("Presence reports per second",
              [("sum(rate(basra_accounts_presence_reports_total[1m]))", "reports")], "ops"),
    ])


def matchmaking() -> dict:
    return dashboard("basra-matchmaking", "Basra online: matchmaking", red("matchmaking") + [
        panel("Queue length",
              [("sum(basra_matchmaking_queue_waiting)", "all formats"),
               ("sum by (format) (basra_matchmaking_queue_length)", "{{format}}")],
              description="A format's series starts once a ticket of it has waited."),
        panel("Matches per second",
              [("sum(rate(basra_matchmaking_matches_total[1m]))", "matches"),
               ("sum(rate(basra_matchmaking_bot_matches_total[1m]))", "with bots")], "ops"),
        panel("Time to a match",
              [(quantile(0.5, "basra_matchmaking_wait_seconds", ""), "p50"),
               (quantile(0.9, "basra_matchmaking_wait_seconds", ""), "p90")], "s"),
        panel("Searches per second",
              [("sum(rate(basra_matchmaking_tickets_total[1m]))", "started"),
               ("sum(rate(basra_matchmaking_expired_total[1m]))", "expired")], "ops"),
        panel("Rooms game-session failed to create",
              [("sum(rate(basra_matchmaking_room_failures_total[5m]))", "per second")], "ops"),
    ])


def game_session() -> dict:
    return dashboard("basra-game-session", "Basra online: game-session", red("game-session") + [
        panel("Play streams, by pod",
              [("sum by (pod) (basra_game_open_streams)", "{{pod}}"),
               ("max(basra_game_max_streams)", "most per pod")]),
        panel("Rooms with a player connected, by pod",
              [("sum by (pod) (basra_game_rooms_watched)", "{{pod}}")]),
        panel("Plays per second, by pod",
              [("sum by (pod) (rate(basra_game_plays_total[1m]))", "{{pod}}")], "ops"),
        panel("Room commit latency",
              [(quantile(0.5, "basra_game_commit_seconds", ""), "p50"),
               (quantile(0.99, "basra_game_commit_seconds", ""), "p99")], "s"),
        panel("Commit conflicts and rooms read whole, per second",
              [("sum(rate(basra_game_cas_conflicts_total[1m]))", "conflicts (retried)"),
               ("sum(rate(basra_game_stale_states_total[1m]))", "stale states (reloaded)"),
               ("sum(rate(basra_game_contention_failures_total[1m]))", "given up"),
               ("sum(rate(basra_game_room_loads_total[1m]))", "rooms read whole (no state held)")],
              "ops"),
        panel("Matches ended per second, by result",
              [("sum by (result) (rate(basra_game_matches_ended_total[5m]))", "{{result}}")], "ops"),
        panel("Outbox to accounts",
              [("max by (pod) (basra_game_outbox_pending)", "pending {{pod}}"),
               ("max(basra_game_outbox_oldest_age_seconds)", "oldest, seconds")]),
        panel("Records delivered per second",
              [("sum(rate(basra_game_outbox_delivered_total[5m]))", "delivered"),
               ("sum(rate(basra_game_outbox_redelivered_total[5m]))", "already recorded")], "ops"),
        panel("Timers fired per second", [("sum(rate(basra_game_timers_fired_total[1m]))", "timers")], "ops"),
        panel("Admission",
              [("sum(rate(basra_game_streams_refused_total[1m]))", "streams refused"),
               ("sum(rate(basra_game_joins_queued_total[1m]))", "joins queued")], "ops"),
        panel("Draining, by pod", [("max by (pod) (basra_game_draining)", "{{pod}}")]),
    ])


DASHBOARDS = {
    "overview.json": overview,
    "accounts.json": accounts,
    "matchmaking.json": matchmaking,
    "game-session.json": game_session,
}


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        text = json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"deploy/grafana: {', '.join(stale)} differ from dashboards.py; "
              "run python3 deploy/grafana/dashboards.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

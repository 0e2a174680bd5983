#!/usr/bin/env python3
"""Runs documented DuckDB queries against an export, for tests/it/queries.rs.

    python3 run_duckdb.py EXPORT_DIR < queries.json

The input is a JSON list of {"name": ..., "sql": ...}: each text as printed in the docs,
whose paths name the export `/tmp/basra-export`; that prefix is replaced by EXPORT_DIR.
Every statement of every text runs, in a fresh in-memory DuckDB per text (DuckDB from PyPI:
`pip install duckdb`, installed by `make deps`). Prints one JSON line: for each text, its
name and, for each query (SELECT) statement, its columns, row count and first rows
(up to 500, values as strings), or the error that stopped it.
"""

import json
import sys

import duckdb

DOCUMENTED_EXPORT = "/tmp/basra-export"


def run(export: str, name: str, sql: str) -> dict:
    con = duckdb.connect()
    results = []
    try:
        for statement in con.extract_statements(sql.replace(DOCUMENTED_EXPORT, export)):
            cursor = con.execute(statement)
            # SET and the like answer an empty description: only queries answer rows.
            if statement.type != duckdb.StatementType.SELECT or cursor.description is None:
                continue
            rows = cursor.fetchall()
            columns = [d[0] for d in cursor.description]
            results.append(
                {
                    "columns": columns,
                    "rows": len(rows),
                    "first": [[None if v is None else str(v) for v in row] for row in rows[:500]],
                }
            )
    except duckdb.Error as error:
        return {"name": name, "error": f"{type(error).__name__}: {error}", "results": results}
    finally:
        con.close()
    return {"name": name, "error": None, "results": results}


def main() -> int:
    export = sys.argv[1]
    queries = json.load(sys.stdin)
    print(json.dumps([run(export, q["name"], q["sql"]) for q in queries]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

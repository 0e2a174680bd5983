#!/usr/bin/env python3
"""Libraries never depend on services (`make lint`).

Reads the workspace from `cargo metadata --format-version 1 --no-deps` and fails, naming
both crates, when a package under `libs/` has a normal or build dependency on a package
under `services/`. Dev-dependencies are allowed: a library's tests may start a service
(analytics fills its test databases through the accounts store and its migrations).

The one library that may depend on services is the test kit (`basra-testkit`): it starts
each service for that service's tests (`spawn_app()`), behind an optional dependency
named by a feature. It is a library nothing runs: so the check fails too when any
package depends on it other than as a dev-dependency, or when its dependency on a
service is not optional. Standard library only.
"""

import json
import os
import subprocess
import sys

metadata = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
)
root = metadata["workspace_root"]


def layer(manifest_path):
    """The top folder of a package inside the workspace: libs, services, clients, …"""
    rel = os.path.relpath(os.path.dirname(manifest_path), root)
    return rel.split(os.sep)[0]


TESTKIT = "basra-testkit"

layers = {p["name"]: layer(p["manifest_path"]) for p in metadata["packages"]}
wrong = []
for package in metadata["packages"]:
    for dep in package["dependencies"]:
        # kind: None (normal), "build" or "dev".
        if dep["name"] == TESTKIT and dep["kind"] != "dev":
            kind = dep["kind"] or "normal"
            wrong.append(f"{package['name']} has a {kind} dependency on {TESTKIT} (tests only: a dev-dependency)")
    if layers[package["name"]] != "libs":
        continue
    for dep in package["dependencies"]:
        if dep["kind"] == "dev":
            continue
        target = dep.get("rename") or dep["name"]
        if layers.get(dep["name"]) == "services":
            kind = dep["kind"] or "normal"
            if package["name"] == TESTKIT and dep["optional"] and kind == "normal":
                continue
            wrong.append(f"{package['name']} (libs/) has a {kind} dependency on {target} (services/)")

if wrong:
    print("a library depends on a service (move the shared part into a crate under libs/),")
    print("or the test kit is more than a dev-dependency:")
    for line in wrong:
        print(f"  {line}")
    sys.exit(1)
print(
    f"layers: {sum(1 for l in layers.values() if l == 'libs')} crates under libs/, none depends on services/"
    f" (but {TESTKIT}, optionally), and {TESTKIT} is only a dev-dependency"
)

#!/usr/bin/env python3
"""`make k8s-check`: render every overlay and validate every object it holds.

- Each overlay under deploy/k8s/overlays renders with `kubectl kustomize`.
- Every built-in object passes kubernetes-validate in strict mode (unknown fields are
  errors) for each Kubernetes version in VERSIONS: the oldest we support and the newest
  the installed kubernetes-validate knows.
- Every custom resource (Gateway, GRPCRoute, HTTPRoute) is validated against the openAPIV3Schema of
  its CRD, vendored in deploy/k8s/crds, also strictly: an unknown field is an error
  (the API server would silently drop it).
- The manifests agree with the services: each Deployment's gRPC probes and ports match
  its settings file's listen port and the service's health name in the source, and the
  termination grace period covers the preStop pause plus the drain.
- Only client services are routed: every GRPCRoute match names a service of proto/ that
  is neither internal (`internal.proto`: service-to-service) nor admin (`admin.proto`),
  by its exact name, and every HTTPRoute path is `/` (the page, to the web backend) or
  `/<such a service>/`; no route reaches an internal or admin method by any path.
- Browsers reach what native clients reach: the HTTPRoute of the web listener sends each
  gRPC service the GRPCRoute routes (its path prefix `/<service>/`, gRPC-Web) to the same
  backend, and every ConfigMap a Deployment reads a setting from is in the overlay.
- Capacity follows the measured figures (deploy/README.md, "Capacity per pod"): the
  game-session HPA's maxReplicas x its streams target carries the cost sheet's players,
  the target stays below game.max_streams, the memory limit covers max_streams streams,
  and deploy/README.md's copy of the cost sheet equals docs/performance.md's.
- The Dockerfile builds with the script `make release` runs.
- Every CronJob forbids concurrent runs, runs as non-root on a read-only root filesystem
  with requests and limits; the analytics export's flags and environment are ones
  `basra analytics export` defines (clients/cli/src/analytics.rs).

Exit status 1 with one line per problem; 0 and a summary line when all is well.
"""

from __future__ import annotations

import copy
import pathlib
import re
import subprocess
import sys
import tomllib

import jsonschema
import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]

# What each Deployment serves: its settings file in base/ and where its health name is.
# Each service's crate, and the constant in its sources that names its gRPC services.
SERVICES = {
    "accounts": ("services/accounts/src", "SERVICE_NAME"),
    "matchmaking": ("services/matchmaking/src", "SERVICE_NAME"),
    "game-session": ("services/game-session/src", "SERVICE_NAMES"),
}

problems: list[str] = []


def problem(where: str, what: str) -> None:
    problems.append(f"{where}: {what}")


def render(overlay: pathlib.Path) -> list[dict]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        problem(str(overlay.relative_to(ROOT)), f"kubectl kustomize failed: {out.stderr.strip()}")
        return []
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def strict_schema(schema: dict) -> dict:
    """The CRD schema with unknown fields forbidden wherever the CRD lists the fields."""
    schema = copy.deepcopy(schema)

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if (
                node.get("type") == "object"
                and "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # metadata is the API server's ObjectMeta, not described by the CRD.
    schema.get("properties", {}).get("metadata", {}).pop("additionalProperties", None)
    return schema


def crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> strict schema, from every vendored CRD."""
    schemas = {}
    for path in sorted((K8S / "crds").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                if not version.get("served", False):
                    continue
                schema = version["schema"]["openAPIV3Schema"]
                schemas[(f"{group}/{version['name']}", kind)] = strict_schema(schema)
    return schemas


def validate_object(doc: dict, where: str, crds: dict[tuple[str, str], dict]) -> None:
    key = (doc.get("apiVersion", ""), doc.get("kind", ""))
    if key in crds:
        validator = jsonschema.Draft202012Validator(crds[key])
        for error in validator.iter_errors(doc):
            path = "/".join(str(p) for p in error.absolute_path)
            problem(where, f"CRD schema: {path}: {error.message}")
        return
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = "/".join(str(p) for p in error.path)
            problem(where, f"Kubernetes {version}: {path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError:
            problem(where, f"no schema for {key} in Kubernetes {version} nor in deploy/k8s/crds")


def health_names(service: str) -> list[str]:
    path, constant = SERVICES[service]
    for source in sorted((ROOT / path).rglob("*.rs")):
        match = re.search(rf"pub const {constant}: [^=]+=\s*(.+?);", source.read_text(), re.S)
        if match:
            return re.findall(r'"([^"]+)"', match.group(1))
    problem(path, f"cannot find {constant}")
    return []


def check_deployment(doc: dict, where: str) -> None:
    name = doc["metadata"]["name"]
    if name not in SERVICES:
        return
    settings = tomllib.loads((K8S / "base" / name / "config.toml").read_text())
    port = int(settings["server"]["listen"].rsplit(":", 1)[1])
    drain = settings["server"]["drain_seconds"]
    names = health_names(name)
    pod = doc["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == name]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    if ports.get("grpc") != port:
        problem(where, f"container port grpc {ports.get('grpc')} != server.listen port {port}")
    metrics = settings.get("metrics", {}).get("listen", "")
    if not metrics or ports.get("metrics") != int(metrics.rsplit(":", 1)[1]):
        problem(where, f"container port metrics {ports.get('metrics')} != metrics.listen {metrics!r}")
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container.get(kind, {}).get("grpc")
        if probe is None:
            problem(where, f"{kind} is not a grpc probe")
            continue
        if probe["port"] != port:
            problem(where, f"{kind} port {probe['port']} != server.listen port {port}")
        service = probe.get("service", "")
        if service and service not in names:
            problem(where, f"{kind} service {service!r} is not one of {names}")
    pause = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if grace <= pause + drain + 1:
        problem(where, f"terminationGracePeriodSeconds {grace} <= preStop {pause} + drain {drain} + 1")
    security = container.get("securityContext", {})
    if not security.get("readOnlyRootFilesystem"):
        problem(where, "the root filesystem is not read-only")
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problem(where, "runAsNonRoot is not set")
    if not container.get("resources", {}).get("limits") or not container["resources"].get("requests"):
        problem(where, "resource requests and limits are not both set")


def proto_services() -> dict[str, str]:
    """Every gRPC service of proto/ by its full name: "client", "internal" or "admin"."""
    services = {}
    for path in sorted((ROOT / "proto").rglob("*.proto")):
        text = path.read_text()
        package = re.search(r"^package\s+([\w.]+)\s*;", text, re.M)
        kind = {"internal.proto": "internal", "admin.proto": "admin"}.get(path.name, "client")
        for name in re.findall(r"^service\s+(\w+)", text, re.M):
            services[f"{package.group(1)}.{name}" if package else name] = kind
    return services


def check_routes(docs: list[dict], overlay: str) -> None:
    """Only client services are routed; gRPC-Web paths route as the GRPCRoute does; env
    settings' ConfigMaps exist."""
    services = proto_services()
    clients = {name for name, kind in services.items() if kind == "client"}
    grpc, web = {}, {}
    for doc in docs:
        for rule in doc.get("spec", {}).get("rules", []) if doc.get("kind") in ("GRPCRoute", "HTTPRoute") else []:
            backends = [(b["name"], b.get("port")) for b in rule.get("backendRefs", [])]
            where = f"{overlay}: {doc['kind']}/{doc['metadata']['name']}"
            for match in rule.get("matches", []) or [{}]:
                if doc["kind"] == "GRPCRoute":
                    method = match.get("method", {})
                    if method.get("type", "Exact") != "Exact" or method.get("service") not in clients:
                        problem(where, f"a match {method or 'of everything'} routes more than a client "
                                f"service by its exact name (client services: {sorted(clients)}; "
                                f"internal and admin services are never routed)")
                    else:
                        grpc[method["service"]] = backends
                elif doc["kind"] == "HTTPRoute":
                    path = match.get("path", {"value": "/"})["value"]
                    service = path.strip("/")
                    if path != "/" and (not path.startswith("/") or not path.endswith("/") or service not in clients):
                        problem(where, f"path {path!r} is neither / nor /<client service>/ "
                                f"(internal and admin services are never routed)")
                    web[path] = backends
    for service, backends in grpc.items():
        if web.get(f"/{service}/") != backends:
            problem(f"{overlay}: HTTPRoute", f"gRPC-Web path /{service}/ does not go to {backends} as the GRPCRoute does")
    if grpc and "/" not in web:
        problem(f"{overlay}: HTTPRoute", "no rule for the page (/)")
    elif grpc and any(web["/"] == backends for backends in grpc.values()):
        problem(f"{overlay}: HTTPRoute", "the page's rule (/) goes to a gRPC service's backend")
    config_maps = {d["metadata"]["name"] for d in docs if d.get("kind") == "ConfigMap"}
    for doc in docs:
        if doc.get("kind") not in ("Deployment", "CronJob"):
            continue
        for container in pod_spec(doc)["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("configMapKeyRef")
                if ref and ref["name"] not in config_maps:
                    problem(f"{overlay}: {doc['kind']}/{doc['metadata']['name']}",
                            f"env {env['name']} reads ConfigMap {ref['name']}, not in the overlay")


def pod_spec(doc: dict) -> dict:
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return doc["spec"]["template"]["spec"]


# The CronJobs running `basra` subcommands, and the file defining their flags.
CLI_COMMANDS = {"analytics-export": "clients/cli/src/analytics.rs"}


def check_cronjob(doc: dict, where: str) -> None:
    if doc["spec"].get("concurrencyPolicy") != "Forbid":
        problem(where, "concurrencyPolicy is not Forbid (two runs would race)")
    pod = pod_spec(doc)
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problem(where, "runAsNonRoot is not set")
    for container in pod["containers"]:
        if not container.get("securityContext", {}).get("readOnlyRootFilesystem"):
            problem(where, f"container {container['name']}: the root filesystem is not read-only")
        resources = container.get("resources", {})
        if not resources.get("limits") or not resources.get("requests"):
            problem(where, f"container {container['name']}: resource requests and limits are not both set")
    source = CLI_COMMANDS.get(doc["metadata"]["name"])
    if source is None:
        return
    text = (ROOT / source).read_text()
    for container in pod["containers"]:
        for arg in container.get("args", []):
            if arg.startswith("--") and f"    {arg[2:].replace('-', '_')}: " not in text:
                problem(where, f"{arg} is not a flag of {source}")
        for env in container.get("env", []):
            name = env["name"]
            if name != "TMPDIR" and f'env = "{name}"' not in text:
                problem(where, f"env {name} is not read by {source}")


# The cost sheet's players, and the measured memory of one stream with its connection
# (the top of the measured 35-37 KiB) and of a replica with none (docs/performance.md).
PLAYERS = 100_000
STREAM_KIB = 37
IDLE_MIB = 13


def quantity_mib(value: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for unit, factor in units.items():
        if value.endswith(unit):
            return float(value[: -len(unit)]) * factor
    return float(value) / (1024 * 1024)


def check_capacity(docs: list[dict], overlay: str) -> None:
    settings = tomllib.loads((K8S / "base" / "game-session" / "config.toml").read_text())
    max_streams = settings["game"]["max_streams"]
    for doc in docs:
        if doc.get("kind") == "HorizontalPodAutoscaler" and doc["metadata"]["name"] == "game-session":
            (target,) = [
                int(m["pods"]["target"]["averageValue"])
                for m in doc["spec"]["metrics"]
                if m["type"] == "Pods" and m["pods"]["metric"]["name"] == "basra_game_open_streams"
            ]
            carried = doc["spec"]["maxReplicas"] * target
            if carried < PLAYERS:
                problem(f"{overlay}: HPA/game-session", f"maxReplicas x {target} streams = {carried} < {PLAYERS} players")
            if target >= max_streams:
                problem(f"{overlay}: HPA/game-session", f"target {target} streams is not below game.max_streams {max_streams}")
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "game-session":
            (container,) = [c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == "game-session"]
            limit = quantity_mib(container["resources"]["limits"]["memory"])
            need = max_streams * STREAM_KIB / 1024 + IDLE_MIB
            if limit < need:
                problem(f"{overlay}: Deployment/game-session", f"memory limit {limit:.0f} MiB < {need:.0f} MiB for {max_streams} streams")


def cost_sheet(path: pathlib.Path) -> list[str]:
    text = path.read_text()
    start = text.find("| part | load | per-unit figure |")
    if start < 0:
        problem(str(path.relative_to(ROOT)), "no cost sheet table")
        return []
    return text[start:].split("\n\n", 1)[0].splitlines()


def check_cost_sheet() -> None:
    if cost_sheet(ROOT / "deploy/README.md") != cost_sheet(ROOT / "docs/performance.md"):
        problem("deploy/README.md", "the capacity table differs from docs/performance.md's cost sheet")


def check_release_build() -> None:
    """The image's build step is the script `make release` runs, with the same crates."""
    dockerfile = (ROOT / "deploy/docker/Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    script = (ROOT / "deploy/docker/release.sh").read_text()
    if not re.search(r"^RUN deploy/docker/release\.sh /out$", dockerfile, re.M):
        problem("deploy/docker/Dockerfile", "the build step is not `RUN deploy/docker/release.sh /out`")
    if not re.search(r"^release:.*\n(\t.*\n)*\tdeploy/docker/release\.sh", makefile, re.M):
        problem("Makefile", "`make release` does not run deploy/docker/release.sh")
    built = re.search(r"^cargo build --release --locked (.+)$", script, re.M)
    cooked = re.search(r"cargo chef cook --release --locked [^\n]*\\\n\s*(.+)$", dockerfile, re.M)
    if not built or not cooked:
        problem("deploy/docker", "cannot find the cargo build and cargo chef cook lines")
        return
    packages = lambda line: sorted(re.findall(r"-p (\S+)", line))  # noqa: E731
    if packages(built.group(1)) != packages(cooked.group(1)):
        problem("deploy/docker", "cargo chef cook builds other crates than release.sh")
    for bin in packages(built.group(1)):
        if f"/out/{bin} " not in dockerfile:
            problem("deploy/docker/Dockerfile", f"no image copies the {bin} binary")


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (lowercase, punctuation dropped,
    spaces as hyphens), outside code blocks."""
    anchors = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match and not in_code:
            text = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def check_runbooks() -> None:
    """Every alert links (annotation `runbook`, `path#anchor` from the repository root) to
    a heading that exists: the on-call person lands on what to do."""
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert")
            if not name:
                continue
            link = rule.get("annotations", {}).get("runbook", "")
            where = f"deploy/prometheus/alerts.yaml: {name}"
            path, _, anchor = link.partition("#")
            if not path or not anchor:
                problem(where, f"no runbook link (path#heading): {link!r}")
                continue
            target = ROOT / path
            if not target.is_file():
                problem(where, f"runbook {path} does not exist")
            elif anchor not in heading_anchors(target.read_text()):
                problem(where, f"runbook {link} names no heading of {path}")


def main() -> int:
    crds = crd_schemas()
    if not crds:
        problem("deploy/k8s/crds", "no CRD schemas found")
    counted = 0
    overlays = sorted(p for p in (K8S / "overlays").iterdir() if p.is_dir())
    for overlay in overlays:
        docs = render(overlay)
        check_routes(docs, overlay.name)
        check_capacity(docs, overlay.name)
        for doc in docs:
            where = f"{overlay.name}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            validate_object(doc, where, crds)
            if doc.get("kind") == "Deployment":
                check_deployment(doc, where)
            if doc.get("kind") == "CronJob":
                check_cronjob(doc, where)
            counted += 1
    check_release_build()
    check_cost_sheet()
    check_runbooks()
    for line in problems:
        print(f"k8s-check: {line}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"k8s-check: {counted} objects in {len(overlays)} overlays "
        f"({', '.join(o.name for o in overlays)}) valid for Kubernetes {', '.join(VERSIONS)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

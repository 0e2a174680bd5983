#!/usr/bin/env python3
"""Nothing in the repository points outside it (`make lint`).

Fails, naming file and line, on:
- a relative Markdown link (or image) in any tracked .md file whose target is not in the
  tree, or whose #anchor names no heading of the target Markdown file;
- a relative path (`../…`) in any tracked .md, .rs, .proto or .ts file, in a link or
  in plain text, comments and strings alike, that climbs out of the repository or names
  nothing in the tree: material kept beside the repository is not in a clone.

"Tracked" is what git knows: committed files plus new files not ignored, so a link to a
file that is only built (clients/web/dist) or only on this machine fails too. Code may
import what `buf generate` writes (the `out:` of a tracked buf.gen.yaml, such as
clients/web/src/gen): a path in there is taken as in the tree.
Standard library only.
"""

import os
import re
import subprocess
import sys
from functools import lru_cache

ROOT = subprocess.run(
    ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
).stdout.strip()
os.chdir(ROOT)

FILES = [
    path
    for path in subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    if path and os.path.exists(path)
]
TREE = set(FILES)
DIRS = {os.path.dirname(path) for path in FILES}
while True:
    parents = {os.path.dirname(d) for d in DIRS} - DIRS
    if not parents:
        break
    DIRS |= parents

# What `buf generate` writes: each tracked buf.gen.yaml's `out:` directories, beside it.
GENERATED = {
    os.path.normpath(os.path.join(os.path.dirname(path), out))
    for path in FILES
    if os.path.basename(path) == "buf.gen.yaml"
    for out in re.findall(r"^\s*out:\s*(\S+)", open(path, encoding="utf-8").read(), re.M)
}

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# A relative path that starts by climbing: `../x`, `../../x/y`.
CLIMBING = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-]+(?:/[\w.-]+)*")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: str) -> frozenset:
    found, seen, in_fence = set(), {}, False
    with open(path, encoding="utf-8") as file:
        for line in file:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            match = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if match:
                base = slug(match.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def check_markdown(path: str, problems: list) -> None:
    in_fence = False
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        check_climbing(path, where, line, problems)
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        text = INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(text)]
        reference = REFERENCE.match(text)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            if file_part:
                base = ROOT if file_part.startswith("/") else os.path.dirname(path)
                resolved = os.path.relpath(
                    os.path.normpath(os.path.join(base, file_part.lstrip("/")))
                )
                if resolved.startswith(".."):
                    problems.append(f"{where}: {target} leaves the repository")
                    continue
                if resolved not in TREE and resolved not in DIRS and resolved != ".":
                    problems.append(f"{where}: {target}: no such file in the tree")
                    continue
            else:
                resolved = path
            if anchor and resolved.endswith(".md") and resolved in TREE:
                if anchor.lower() not in anchors(resolved):
                    problems.append(f"{where}: {target}: no heading #{anchor} in {resolved}")


def check_climbing(path: str, where: str, line: str, problems: list) -> None:
    """Relative paths in `line` of `path` that leave the repository or go nowhere. Code
    joins paths to its crate's (or package's) directory as often as to its own, and may
    name what a build makes (`dist/`): either base will do, and a path whose directory is
    in the tree is there."""
    bases = {os.path.dirname(path), package_dir(path)}
    for match in CLIMBING.finditer(line):
        target = match.group(0).rstrip(".")
        resolved = [os.path.normpath(os.path.join(base, target)) for base in bases]
        inside = [r for r in resolved if not r.startswith("..")]
        if not inside:
            problems.append(f"{where}: {target} leaves the repository")
        elif not any(
            r in TREE or r in DIRS or os.path.dirname(r) in DIRS or any(r.startswith(g + "/") for g in GENERATED)
            for r in inside
        ):
            problems.append(f"{where}: {target}: no such file in the tree")


def package_dir(path: str) -> str:
    """The nearest directory above `path` with a Cargo.toml or package.json (or the root)."""
    folder = os.path.dirname(path)
    while folder:
        if any(os.path.join(folder, name) in TREE for name in ("Cargo.toml", "package.json")):
            return folder
        folder = os.path.dirname(folder)
    return ""


def check_code(path: str, problems: list) -> None:
    with open(path, encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, 1):
            check_climbing(path, f"{path}:{number}", line, problems)


def main() -> int:
    problems: list = []
    for path in sorted(FILES):
        if path.endswith(".md"):
            check_markdown(path, problems)
        elif path.endswith((".rs", ".proto", ".ts")):
            check_code(path, problems)
    if problems:
        print("check-links: links or paths that leave the repository or go nowhere:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    checked = sum(path.endswith(".md") for path in FILES)
    print(f"check-links: {checked} Markdown files, every relative link resolves; nothing points outside")
    return 0


if __name__ == "__main__":
    sys.exit(main())

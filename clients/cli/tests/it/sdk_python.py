"""The Python code of `make sdk` against a running `basra dev` (clients/cli/tests/it/sdk.rs):
imports every generated module, then signs in as a new guest and reads its own profile
with the generated stubs (grpcio).

    python3 sdk_python.py SDK_PYTHON_DIR HOST:PORT

Prints `imported <module>` for each module and `ok: <user id>`; any failure raises.
"""

import importlib
import pathlib
import sys
import uuid

import grpc

root = pathlib.Path(sys.argv[1]).resolve()
address = sys.argv[2]
sys.path.insert(0, str(root))

# The generated tree has no __init__.py: its folders import as namespace packages.
modules = sorted(
    ".".join(path.relative_to(root).with_suffix("").parts) for path in root.rglob("*.py")
)
assert modules, f"no module in {root}"
for name in modules:
    importlib.import_module(name)
    print(f"imported {name}")

from basra.accounts.v1 import accounts_pb2, accounts_pb2_grpc  # noqa: E402 (generated above)

client = [("basra-client", "python/0.1.0")]
with grpc.insecure_channel(address) as channel:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    signed_in = accounts.GuestLogin(
        accounts_pb2.GuestLoginRequest(device_id=str(uuid.uuid4())), metadata=client, timeout=10
    )
    tokens = signed_in.tokens
    assert tokens.is_guest and tokens.access_token, tokens
    answer = accounts.GetProfile(
        accounts_pb2.GetProfileRequest(),
        metadata=client + [("authorization", f"Bearer {tokens.access_token}")],
        timeout=10,
    )
    assert answer.profile.user_id == tokens.user_id, (answer, tokens.user_id)
    print(f"ok: {answer.profile.user_id}")

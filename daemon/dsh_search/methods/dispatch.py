"""jsonrpcserver's dispatcher, imported without its package's `__init__`.

The design names jsonrpcserver for method dispatch, and its dispatcher (method lookup, argument
binding, result and error mapping) is what the daemon uses. Its package `__init__`, though, also
imports its HTTP server and builds a JSON Schema validator for whole requests at import time — neither
of which the daemon uses (the transport checks envelopes itself) — and that was 45 of the 75 ms the
frozen daemon spent importing before it could answer its first request. So the package is registered
as an empty namespace from its own location, and only the modules that dispatch are imported from it.
"""

from __future__ import annotations

import importlib.util
import sys

if "jsonrpcserver" not in sys.modules:
    _spec = importlib.util.find_spec("jsonrpcserver")
    if _spec is None or _spec.submodule_search_locations is None:
        raise ImportError("jsonrpcserver is not installed")
    sys.modules["jsonrpcserver"] = importlib.util.module_from_spec(_spec)  # its __init__ is not run

from jsonrpcserver.async_dispatcher import dispatch_request
from jsonrpcserver.dispatcher import to_response
from jsonrpcserver.exceptions import JsonRpcError
from jsonrpcserver.request import Request
from jsonrpcserver.response import to_serializable_one
from jsonrpcserver.result import Result, Success
from jsonrpcserver.sentinels import NOID

__all__ = [
    "NOID",
    "JsonRpcError",
    "Request",
    "Result",
    "Success",
    "dispatch_request",
    "to_response",
    "to_serializable_one",
]

"""Call Ratchet's tool bridge from a script. Standard library only.

    from ratchet_tools import call_mcp, call_custom, api_spec, ToolError

    total = call_mcp("calc", "add", {"a": 2, "b": 3})
    echoed = call_custom("echo", {"text": "hi"})
    print(api_spec(["calc/add", "echo"]))

The bridge's address and token come from MCP_API_URL and MCP_API_TOKEN, which Ratchet sets for
every run. A reply with "success": false raises ToolError carrying the bridge's error text and the
HTTP status. Only failures to connect (refused, reset or timed out while sending the request) are
retried, with exponential backoff, at most MAX_ATTEMPTS times in all; a call the bridge answered
is never repeated.
"""

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["ToolError", "call_mcp", "call_custom", "api_spec", "MAX_ATTEMPTS"]

#: Most attempts of one call when the bridge cannot be reached (the first try included).
MAX_ATTEMPTS = 5
#: Wait before the second attempt, in seconds; doubled before each further one.
BACKOFF_BASE_S = 0.2
#: Longest wait between two attempts, in seconds.
BACKOFF_MAX_S = 5.0
#: Socket timeout of one request, in seconds. The bridge bounds every call itself; this only
#: guards against a bridge that stops answering.
REQUEST_TIMEOUT_S = 3600.0

_RETRYABLE = (ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class ToolError(Exception):
    """A tool call failed: the bridge answered "success": false, or could not be reached.

    ``status`` is the HTTP status of the reply (None when the bridge was not reached).
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _env(name):
    try:
        value = os.environ[name]
    except KeyError:
        value = ""
    if not value:
        raise ToolError("%s is not set: run this script through Ratchet (or export %s)" % (name, name))
    return value


def _decode(status, body):
    try:
        reply = json.loads(body.decode("utf-8"))
    except ValueError:
        raise ToolError("the tool bridge answered HTTP %d with a non-JSON body: %r" % (status, body[:200]), status)
    if not isinstance(reply, dict) or "success" not in reply:
        raise ToolError("the tool bridge answered HTTP %d without a success field" % status, status)
    if not reply.get("success"):
        raise ToolError(reply.get("error") or "the tool call failed (HTTP %d)" % status, status)
    return reply.get("result")


def _post(path, payload):
    base = _env("MCP_API_URL").rstrip("/")
    token = _env("MCP_API_TOKEN")
    data = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + token}
    attempt = 0
    while True:
        attempt += 1
        request = urllib.request.Request(base + path, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as err:
            status, body = err.code, err.read()
        except urllib.error.URLError as err:
            # urllib wraps errors raised while connecting and sending; the bridge has not run anything.
            if isinstance(err.reason, _RETRYABLE) and attempt < MAX_ATTEMPTS:
                time.sleep(min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))
                continue
            raise ToolError(
                "cannot reach the tool bridge at %s after %d attempt(s): %s" % (base, attempt, err.reason)
            ) from err
        except OSError as err:
            # Failed while waiting for the answer: the call may have run, so it is not repeated.
            raise ToolError("the connection to the tool bridge failed during the call: %s" % err) from err
        return _decode(status, body)


def _segment(name):
    return urllib.parse.quote(str(name), safe="")


def call_mcp(server, tool, args=None):
    """Calls ``tool`` of MCP server ``server`` with the arguments dict ``args``; returns its result."""
    return _post("/tools/mcp/%s/%s" % (_segment(server), _segment(tool)), {} if args is None else args)


def call_custom(tool, args=None):
    """Calls the custom tool ``tool`` with the arguments dict ``args``; returns its result."""
    return _post("/tools/custom/%s" % _segment(tool), {} if args is None else args)


def api_spec(names):
    """The text spec of one tool name or a list of names ("server/tool", "mcp:server/tool", "custom_tool")."""
    if isinstance(names, (list, tuple)):
        names = list(names)
    return _post("/tools/virtual/get_api_spec", {"tool_name": names})

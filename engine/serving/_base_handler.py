"""``BaseHandler``: what every endpoint of the listener answers alike.

OpenAI error objects for every failure (tornado's own included), CORS for the origins the
listener allows, the bearer token (or, without one, the loopback-only checks) and a 503 while
no model is loaded.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from typing import Any

from tornado.web import Finish, RequestHandler

from ._error_objects import cut

__all__ = ["BaseHandler"]

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class BaseHandler(RequestHandler):
    """OpenAI error objects for every failure, tornado's own (405, 500) included."""

    def initialize(self, listener: Any) -> None:
        self.listener = listener

    def set_default_headers(self) -> None:  # also for error responses (``clear`` calls it)
        self.set_header("Content-Type", "application/json")
        origin = self.request.headers.get("Origin")
        if not origin or not self._origin_allowed(origin):
            return
        allowed = self.application.settings["allowed_origins"]
        self.set_header("Access-Control-Allow-Origin", "*" if "*" in allowed else origin)
        self.set_header("Vary", "Origin, Access-Control-Request-Headers")
        self.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
        # The headers the page's client asked for (the openai JS SDK sends eight of its own
        # x-stainless-* headers), as header names; a bare "*" would not cover Authorization.
        asked = _HEADER_NAME.findall(self.request.headers.get("Access-Control-Request-Headers", ""))
        self.set_header("Access-Control-Allow-Headers",
                        ", ".join(dict.fromkeys(["Authorization", "Content-Type", *asked])))

    def _origin_allowed(self, origin: str) -> bool:
        allowed = self.application.settings.get("allowed_origins", ())
        return "*" in allowed or origin in allowed

    def options(self, *args: Any) -> None:
        """A browser's CORS preflight: 204, with the allow headers when its origin is allowed
        (``Listener(allowed_origins=...)``); a preflight carries no token, so none is asked."""
        self.set_status(204)
        self.finish()

    def fail(self, status: int, message: str, *, type: str = "invalid_request_error",
             param: str | None = None, code: str | None = None):
        """Answer with an OpenAI error object; returns the future of its flush."""
        self.set_status(status)
        error = {"message": message, "type": type, "param": param, "code": code}
        return self.finish({"error": error})

    def decode_argument(self, value: bytes | None, name: str | None = None) -> str | None:
        """A part of the path, as text (tornado's own refusal says only "Bad Request")."""
        try:
            return None if value is None else value.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(400, "The request's path is not UTF-8 once its %-escapes are decoded; "
                           "percent-encode the UTF-8 bytes of the name.")
            raise Finish() from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if status_code == 405:  # (RFC 9110: a 405 lists the methods the resource has)
            self.set_header("Allow", ", ".join(
                [m for m in ("GET", "HEAD", "POST") if m.lower() in type(self).__dict__]
                + ["OPTIONS"]))
        message = {405: f"{cut(self.request.method)} is not allowed on "
                        f"{cut(self.request.path)}.",
                   500: "The server failed on this request; see the listener's log."}
        self.finish({"error": {"message": message.get(status_code, self._reason),
                               "type": "server_error" if status_code >= 500 else
                               "invalid_request_error", "param": None, "code": None}})

    def say_close(self) -> None:
        """Answer ``Connection: close`` (the connection ends after this answer).

        tornado answers every HTTP/1.0 request that asked for keep-alive "Keep-Alive", over
        this header, even on a connection it then closes: the request's own header goes."""
        self.request.headers.pop("Connection", None)
        self.set_header("Connection", "close")

    def authorized(self) -> bool:
        """True, or the request has been answered with 401 (no token or a wrong one) or 403.

        Without a token (loopback only) the token cannot keep web pages out, so two checks
        do: a browser request from a page whose origin is not allowed (a form or a no-cors
        fetch reaches the server without a preflight) and a Host that is no loopback name (a
        DNS-rebinding page, which would be same-origin and read the replies) are refused.
        """
        token = self.listener.token
        if not token:
            origin = self.request.headers.get("Origin")
            if origin is not None and not self._origin_allowed(origin):
                self.fail(403, f"Requests from the web page {origin[:100]!r} are not allowed; "
                               "start the listener with its origin in --allowed-origins.",
                          code="origin_not_allowed")
                return False
            host = self.request.headers.get("Host")
            if host is not None and not _loopback_name(host):
                self.fail(403, f"This listener serves without a token, so only on this "
                               f"machine's loopback names, not as {host[:100]!r}; use "
                               "127.0.0.1 or localhost, or give the listener a token.",
                          code="host_not_allowed")
                return False
            return True
        scheme, _, given = self.request.headers.get("Authorization", "").partition(" ")
        given = given.strip().encode()
        if scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode()):
            return True
        self.set_header("WWW-Authenticate", "Bearer")
        self.fail(401, "Missing or wrong API key: send 'Authorization: Bearer TOKEN' with the "
                       "token the listener printed when it started.", code="invalid_api_key")
        return False

    def engine(self) -> Any:
        """The engine, or None once the request has been answered with 503."""
        engine = self.listener.engine
        if engine is None or not engine.healthy:
            self.fail(503, "No model is loaded in the served engine; load one and retry.",
                      type="server_error", code="model_not_loaded")
            return None
        return engine


def _loopback_name(host: str) -> bool:
    """Whether a Host header names this machine: localhost (or a name under it) or a loopback
    address, with or without a port."""
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8080
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False

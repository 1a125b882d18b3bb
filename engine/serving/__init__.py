"""The OpenAI-compatible HTTP listener: the in-process engine served to other programs.

``Listener(engine).start()`` serves ``/v1/chat/completions``, ``/v1/completions``,
``/v1/models`` and ``/health`` as ``mlx_lm.server`` does, and OpenAI's ``/v1/responses`` (a
chat request in the Responses API's shapes), through the same request path and response
builders as every in-process caller. Private modules: ``_listener`` (the server
thread and its loop), ``_request_head`` (what is refused from a request's head, before the
endpoints); the endpoints: ``_base_handler`` (what every endpoint answers alike),
``_info_handlers`` (health, models, 404), ``_completions`` (the completion endpoints),
``_request_body`` (reading a completion's body), ``_deliveries`` (events to the IO loop),
``_sse``, ``_error_objects`` and ``_thread_reader``.
"""

from ._deliveries import ServedRequest
from ._listener import DEFAULT_PORT, MAX_BODY_BYTES, Listener

__all__ = ["Listener", "ServedRequest", "DEFAULT_PORT", "MAX_BODY_BYTES"]

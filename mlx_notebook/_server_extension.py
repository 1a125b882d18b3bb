"""A Jupyter Server extension that keeps the kernel's status honest while a turn streams.

JupyterLab 4.4+ opens a kernel subshell for widget comms when a kernel shows its first widget
(``create_subshell_request`` on the control channel). The kernel publishes ``busy`` then
``idle`` for that request, and JupyterLab's status bar follows every status message whose
parent type is not in the server's ``untracked_message_types`` -- a list that lacks the
subshell requests. So during a kernel's first ``%%chat`` the status bar said Idle while the
reply streamed (later turns reuse the subshell and show Busy). Subshell management is not
execution: this adds those message types to the untracked list, for the server and for the
copy JupyterLab hands its page. Enabled by the config file this package installs into
``etc/jupyter/jupyter_server_config.d``.
"""

from __future__ import annotations

from typing import Any

SUBSHELL_MESSAGE_TYPES = (
    "create_subshell_request", "create_subshell_reply",
    "delete_subshell_request", "delete_subshell_reply",
    "list_subshell_request", "list_subshell_reply",
)


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "mlx_notebook._server_extension"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    manager = serverapp.kernel_manager
    untracked = list(manager.untracked_message_types)
    untracked += [kind for kind in SUBSHELL_MESSAGE_TYPES if kind not in untracked]
    manager.untracked_message_types = untracked
    page_config = serverapp.web_app.settings.setdefault("page_config_data", {})
    if "untracked_message_types" in page_config:  # JupyterLab copied the list before us
        page_config["untracked_message_types"] = untracked

"""Live notebook widgets: the streaming chat turn and the token-probability view."""

from ._chat_view import MAX_MESSAGES_PER_SECOND, ChatView
from ._token_view import BranchingTokenView, TokenView

__all__ = ["ChatView", "TokenView", "BranchingTokenView", "MAX_MESSAGES_PER_SECOND"]

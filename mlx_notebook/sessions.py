"""Named chat sessions: the turns a conversation has had and the history the next turn sends.

A session keeps every turn (so ``%mlx history`` can show interrupted and failed ones too) but
sends only the turns that belong in the conversation: complete ones, plus any the user chose
to keep with ``turn.keep()``. Sending an interrupted half-answer as
history would silently change what the model sees next; keeping it is the user's decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .turn import Turn

__all__ = ["Session", "SessionStore", "UnknownSession", "DEFAULT_SESSION"]

DEFAULT_SESSION = "default"


class UnknownSession(LookupError):
    """A session name that was never used; the message lists the ones that exist."""


@dataclass
class Session:
    """One conversation: an optional system prompt and its turns in order."""

    name: str
    system: str | None = None
    turns: list[Turn] = field(default_factory=list)
    replaced: bool = False
    """Whether ``%%chat --new`` started another in its place."""
    dropped: bool = False
    """Whether unloading the extension (``%reload_ext``) dropped it with every other session."""

    def history(self, *, system: str | None = None) -> list[dict]:
        """The messages the next request starts with: system prompt, then kept turns.

        ``system`` replaces the session's system prompt for this call ('' drops it).
        """
        system = self.system if system is None else system
        messages: list[dict] = [{"role": "system", "content": system}] if system else []
        for turn in self.turns:
            if turn.in_history:
                messages.extend(turn.messages())
        return messages

    def messages_for(self, user_text: str, *, system: str | None = None) -> list[dict]:
        """The full ``messages`` list for a new user message; nothing changes until ``add``."""
        return [*self.history(system=system), {"role": "user", "content": user_text}]

    def add(self, turn: Turn, *, system: str | None = None) -> None:
        """Record a finished (or interrupted) turn; ``system`` becomes the session's prompt."""
        self.turns.append(turn)
        if system is not None:
            self.system = system or None

    def reset(self) -> None:
        self.turns.clear()
        self.system = None

    @property
    def sent_turns(self) -> int:
        return sum(turn.in_history for turn in self.turns)


class SessionStore:
    """Sessions by name; ``%%chat --session NAME`` creates one on first use."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def open(self, name: str = DEFAULT_SESSION, *, new: bool = False) -> Session:
        """The session called ``name``, created when missing or when ``new`` starts it afresh."""
        if new or name not in self._sessions:
            if name in self._sessions:
                self._sessions[name].replaced = True
            self._sessions[name] = Session(name)
        return self._sessions[name]

    def get(self, name: str) -> Session:
        """An existing session; raise UnknownSession naming the ones there are."""
        try:
            return self._sessions[name]
        except KeyError:
            known = ", ".join(sorted(self._sessions)) or "none yet"
            raise UnknownSession(
                f"There is no session named '{name}' (sessions: {known})."
            ) from None

    def reset(self, name: str) -> None:
        self.get(name).reset()

    def clear(self) -> None:
        for session in self._sessions.values():
            session.dropped = True
        self._sessions.clear()

    def __iter__(self):
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, name: str) -> bool:
        return name in self._sessions

"""Live environment sessions of a server: bounded in number and in idle time.

Ids are integers that are never reused within a server's life, so a client holding
an old id gets a clean "unknown session" instead of someone else's game.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from evoflow.envs.base import TextEnv

log = logging.getLogger(__name__)


class UnknownSession(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class TooManySessions(RuntimeError):
    pass


@dataclass
class Session:
    env: TextEnv
    last_used: float = field(default_factory=time.monotonic)
    score: float = 0.0  # cumulative reward of the current episode


class SessionPool:
    """Create, look up, expire and close sessions of one environment type.

    Parameters
    ----------
    factory
        builds a fresh environment for each session.
    max_sessions
        live sessions allowed at once; creating one more fails after expired
        sessions have been swept.
    idle_ttl
        seconds after which an untouched session is closed.
    """

    def __init__(
        self,
        factory: Callable[[], TextEnv],
        max_sessions: int = 256,
        idle_ttl: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if idle_ttl <= 0:
            raise ValueError(f"idle_ttl must be > 0 seconds, got {idle_ttl}")
        self.factory = factory
        self.max_sessions = max_sessions
        self.idle_ttl = idle_ttl
        self._clock = clock
        self._ids = itertools.count()
        self._sessions: OrderedDict[int, Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self) -> int:
        self.sweep()
        if len(self._sessions) >= self.max_sessions:
            raise TooManySessions(
                f"{self.max_sessions} sessions are live; close some or wait "
                f"{self.idle_ttl:.0f} s for idle ones to expire"
            )
        session_id = next(self._ids)
        self._sessions[session_id] = Session(self.factory(), last_used=self._clock())
        return session_id

    def get(self, session_id: int) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"no session with id {session_id} (closed or expired)")
        session.last_used = self._clock()
        self._sessions.move_to_end(session_id)
        return session

    def close(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            raise UnknownSession(f"no session with id {session_id} (closed or expired)")
        _release(session)

    def sweep(self) -> int:
        """Close sessions idle for longer than ``idle_ttl``; return how many."""
        deadline = self._clock() - self.idle_ttl
        expired = []
        for session_id, session in self._sessions.items():  # oldest use first
            if session.last_used > deadline:
                break
            expired.append(session_id)
        for session_id in expired:
            _release(self._sessions.pop(session_id))
        if expired:
            log.info("sweep: closed %d idle sessions", len(expired))
        return len(expired)


def _release(session: Session) -> None:
    """Free what the session's environment holds (SciWorld's simulator, say)."""
    session.env.close()

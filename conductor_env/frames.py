"""Self-call frames: a workflow step given to the Conductor pauses its round for a sub-workflow.

The round runs as a task. A step assigned to the Conductor's own id posts a :class:`FrameRequest`
on the round's :class:`FrameChannel` and waits; the env hands the request's observation to the
policy, and the policy's next action resolves it. :meth:`FrameChannel.next_request` lets ``step``
return at whichever comes first: a frame to answer, or the round's end.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from conductor_env.workflow import WorkflowError


class FrameParseError(Exception):
    """A self-call frame's sub-workflow did not parse; ends the episode like any parse error.

    Args:
        error: The parser's error.
        depth: The frame's depth.
    """

    def __init__(self, error: WorkflowError, depth: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.depth = depth


@dataclass
class FrameRequest:
    """A pending self-call: the subtask to show and the future its sub-workflow resolves."""

    question: str
    depth: int
    action: asyncio.Future[str]


class FrameChannel:
    """Carries frame requests from a running round to ``step`` and actions back."""

    def __init__(self) -> None:
        self._requests: asyncio.Queue[FrameRequest] = asyncio.Queue()
        self.waiting: FrameRequest | None = None

    async def ask(self, question: str, depth: int) -> str:
        """Posts a frame (called from inside the round) and returns the policy's sub-workflow."""
        request = FrameRequest(question, depth, asyncio.get_running_loop().create_future())
        await self._requests.put(request)
        return await request.action

    def answer(self, action: Any) -> None:
        """Resolves the waiting frame with the policy's action."""
        assert self.waiting is not None
        waiting, self.waiting = self.waiting, None
        waiting.action.set_result(action if isinstance(action, str) else str(action))

    async def next_request(self, round_task: asyncio.Task[Any]) -> FrameRequest | None:
        """Waits for the next frame request or the round's end.

        Returns:
            The request (now :attr:`waiting`), or ``None`` when the round finished first.
        """
        frame_task = asyncio.ensure_future(self._requests.get())
        try:
            await asyncio.wait({round_task, frame_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not frame_task.done():
                frame_task.cancel()
        if frame_task.done() and not frame_task.cancelled():
            self.waiting = frame_task.result()
            return self.waiting
        return None

"""MASRouter's cascaded controller as a torch module (Yue et al., "MasRouter: Learning to Route LLMs for
Multi-Agent Systems", ACL 2025; github.com/yanweiyue/masrouter, ``MAR/MasRouter/mas_router.py``).

Every stage scores texts against a context in a small latent space, as the original does: the
question, the collaboration modes, the agents' roles and the workers are MiniLM embeddings; each
kind of text has its own variational encoder (:class:`VAE`, the original's, with its KL term to a
N(0, 0.1²) prior) whose latent vectors are compared by cosine similarity over a temperature.

1. the task classifier's query projection gives the query context (trained, as in the original,
   with a cross-entropy on the question's domain);
2. the collaboration determiner: softmax over modes of ``cos(ctx_z(question), mode_z) / t_mode``;
3. the number determiner: a categorical over 1..S agents from the question's latent vector and
   the chosen mode's, masked to the counts that mode allows;
4. the role allocator: each agent's role (fixed by the mode, see
   :mod:`~conductor_env.agents.routers.masrouter`) is accumulated into a layer-normed role history,
   as the original's allocator does;
5. the LLM router: per agent, softmax over the shown workers of
   ``cos(W[query ctx, mode ctx, role history], worker_z) / t_worker``.

:meth:`MasRouterNet.decide` samples every choice from a ``torch.Generator`` (training) or takes
the argmax with the VAEs' means (evaluation: deterministic) and returns the choice's summed
log-probability. The arrays are saved with :meth:`MasRouterNet.arrays` and read back with
:meth:`MasRouterNet.from_arrays`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

#: The prior's standard deviation of the original's VAEs (``std2``).
PRIOR_STD = 0.1
_LOG_PRIOR_VAR = math.log(PRIOR_STD**2)


class VAE(nn.Module):
    """The original's variational auto-encoder (encoder D->H->(mu, log var), decoder H->D).

    Args:
        input_dim: Text embedding size.
        hidden_dim: Hidden and latent size.
    """

    def __init__(self, input_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.fc1, self.fc21, self.fc22 = nn.Linear(input_dim, hidden_dim), nn.Linear(hidden_dim, hidden_dim), nn.Linear(hidden_dim, hidden_dim)
        self.fc3, self.fc4 = nn.Linear(hidden_dim, hidden_dim), nn.Linear(hidden_dim, input_dim)

    def forward(self, x: torch.Tensor, generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns the unit latent means and the VAE loss (its reconstruction from a latent sampled with
        ``generator``, else from the mean). The choices are scored on the means, not on sampled latents:
        the sampling noise (0.1 per dimension) swamps the small initial means and makes every choice
        a coin toss the policy gradient cannot sharpen."""
        h = F.relu(self.fc1(x))
        mu, log_var = self.fc21(h), self.fc22(h)
        z = mu if generator is None else mu + torch.randn(mu.shape, generator=generator) * torch.exp(0.5 * log_var) * PRIOR_STD
        x_hat = self.fc4(F.relu(self.fc3(z)))
        kld = -0.5 * torch.mean(1 - _LOG_PRIOR_VAR + log_var - (mu.pow(2) + log_var.exp()) / PRIOR_STD**2)
        return F.normalize(mu, p=2, dim=-1), F.mse_loss(x_hat, x) + kld


@dataclass(frozen=True)
class Texts:
    """The embedded texts the controller chooses among (each ``(count, D)``)."""

    modes: torch.Tensor
    roles: torch.Tensor
    workers: torch.Tensor
    tasks: torch.Tensor | None = None


@dataclass(frozen=True)
class Decision:
    """One question's choices: a mode index, an agent count and each agent's worker (checkpoint index)."""

    mode: int
    count: int
    workers: tuple[int, ...]


#: ``(mode, count) -> the role index of each agent``.
RolesOf = Callable[[int, int], Sequence[int]]


class MasRouterNet(nn.Module):
    """The cascade (see the module docstring).

    Args:
        dim: Text embedding size D.
        hidden: Latent size H (the original's 64).
        max_agents: S, the most agents (workflow steps) a decision may have.
        temps: Softmax temperatures ``(task, mode, worker)``.
    """

    def __init__(self, dim: int, hidden: int, max_agents: int, temps: tuple[float, float, float] = (0.5, 0.2, 0.2)) -> None:
        super().__init__()
        self.max_agents, self.temps = max_agents, temps
        self.query_encoder, self.task_encoder = nn.Linear(dim, hidden), nn.Linear(dim, hidden)
        self.mode_vae, self.context_vae = VAE(dim, hidden), VAE(dim, hidden)
        self.num_vae, self.num_head = VAE(dim, hidden), nn.Linear(2 * hidden, max_agents)
        self.role_vae, self.init_role = VAE(dim, hidden), nn.Parameter(torch.zeros(hidden))
        self.worker_vae, self.worker_context = VAE(dim, hidden), nn.Linear(3 * hidden, hidden)

    def task_loss(self, questions: torch.Tensor, texts: Texts, labels: torch.Tensor) -> torch.Tensor:
        """The task classifier's cross-entropy on the questions' domains (the original's ``task_loss``)."""
        assert texts.tasks is not None
        q = F.normalize(self.query_encoder(questions), dim=-1)
        t = F.normalize(self.task_encoder(texts.tasks), dim=-1)
        return F.cross_entropy(q @ t.T / self.temps[0], labels)

    def decide(
        self,
        questions: torch.Tensor,
        texts: Texts,
        allowed_workers: Sequence[Sequence[int]],
        allowed_counts: Callable[[int], Sequence[int]],
        roles_of: RolesOf,
        limits: Sequence[int],
        generator: torch.Generator | None = None,
    ) -> tuple[list[Decision], torch.Tensor, torch.Tensor]:
        """Chooses a mode, a count and the workers for each question.

        Args:
            questions: ``(B, D)`` question embeddings.
            texts: The modes', roles' and workers' embeddings.
            allowed_workers: Per question, the worker indices it may use (the shown ones).
            allowed_counts: ``mode -> the agent counts it allows``.
            roles_of: ``(mode, count) -> each agent's role index``.
            limits: Per question, the most agents its episode allows (its ``max_steps``); a mode
                none of whose counts fits (nor S) is not offered.
            generator: Samples every choice (and the VAEs' latents) when given; ``None`` takes
                every argmax with the latent means.

        Returns:
            The decisions, their summed log-probabilities ``(B,)`` and the VAE loss.
        """
        query_ctx = F.normalize(self.query_encoder(questions), dim=-1)
        mode_z, loss_m = self.mode_vae(texts.modes, generator)
        ctx_z, loss_c = self.context_vae(questions, generator)
        num_z, loss_n = self.num_vae(questions, generator)
        role_z, loss_r = self.role_vae(texts.roles, generator)
        worker_z, loss_w = self.worker_vae(texts.workers, generator)
        mode_logits = ctx_z @ mode_z.T / self.temps[1]
        decisions, log_probs = [], []
        for b in range(questions.shape[0]):
            fits = {m: [c for c in allowed_counts(m) if 1 <= c <= min(self.max_agents, limits[b])] for m in range(mode_logits.shape[1])}
            mode, lp_mode = _choose(mode_logits[b], [m for m, counts in fits.items() if counts], generator)
            counts = fits[mode]
            count_logits = self.num_head(torch.cat([num_z[b], mode_z[mode]]))
            slot, lp_count = _choose(count_logits, [c - 1 for c in counts], generator)
            history = self.init_role
            workers, lp_workers = [], torch.zeros(())
            for role in roles_of(mode, slot + 1):
                history = F.layer_norm(history + role_z[role], history.shape)
                ctx = F.normalize(self.worker_context(torch.cat([query_ctx[b], mode_z[mode], history])), dim=-1)
                worker, lp = _choose(ctx @ worker_z.T / self.temps[2], allowed_workers[b], generator)
                workers.append(worker)
                lp_workers = lp_workers + lp
            decisions.append(Decision(mode, slot + 1, tuple(workers)))
            log_probs.append(lp_mode + lp_count + lp_workers)
        return decisions, torch.stack(log_probs), loss_m + loss_c + loss_n + loss_r + loss_w

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as named float32 arrays (``net.<parameter name>``)."""
        return {f"net.{name}": value.detach().cpu().numpy().astype(np.float32) for name, value in self.state_dict().items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], *, dim: int, hidden: int, max_agents: int, temps: tuple[float, float, float]) -> MasRouterNet:
        """Builds the net from :meth:`arrays` (strict: every weight present, of its shape).

        Raises:
            ValueError: Naming a missing, unexpected or misshapen weight.
        """
        net = cls(dim, hidden, max_agents, temps=temps)
        state = net.state_dict()
        given = {name[len("net.") :]: value for name, value in arrays.items() if name.startswith("net.")}
        if set(given) != set(state):
            missing, extra = sorted(set(state) - set(given)), sorted(set(given) - set(state))
            raise ValueError(f"masrouter weights do not match the network: missing {missing[:4]}, unexpected {extra[:4]}")
        for name, value in given.items():
            if tuple(value.shape) != tuple(state[name].shape):
                raise ValueError(f"masrouter weight {name!r} has shape {tuple(value.shape)}, expected {tuple(state[name].shape)}")
        net.load_state_dict({name: torch.from_numpy(np.array(value, dtype=np.float32)) for name, value in given.items()})
        return net.eval()


def _choose(logits: torch.Tensor, allowed: Sequence[int] | range, generator: torch.Generator | None) -> tuple[int, torch.Tensor]:
    """Samples (or takes the argmax of) a softmax restricted to ``allowed``; returns the index and its log-probability."""
    index = torch.as_tensor(list(allowed), dtype=torch.long)
    log_p = F.log_softmax(logits[index], dim=-1)
    pick = int(torch.multinomial(log_p.exp(), 1, generator=generator)) if generator is not None else int(torch.argmax(log_p))
    return int(index[pick]), log_p[pick]

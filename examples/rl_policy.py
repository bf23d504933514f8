"""An RL policy-gradient step (REINFORCE with a baseline-free advantage): a tanh
MLP policy, log-softmax + gather of the taken actions, Adam written out as a
pure function of the state (params, moments, step count), all in ONE kernel.

    python examples/rl_policy.py          # GPU: compiled; otherwise the CPU interpreter
"""

from __future__ import annotations

import torch
from torch.func import grad_and_value

OBS, HIDDEN, ACTIONS, BATCH = 16, 64, 4, 32
LR, BETAS, EPS = 3e-3, (0.9, 0.999), 1e-8


def init_state(seed: int = 0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    shapes = [(OBS, HIDDEN), (HIDDEN,), (HIDDEN, ACTIONS), (ACTIONS,)]
    params = tuple((torch.randn(s, generator=g) * s[0] ** -0.5).to(device) for s in shapes)
    zeros = tuple(torch.zeros_like(p) for p in params)
    return {"params": params, "m": zeros, "v": zeros, "t": torch.zeros((), device=device)}


def policy_loss(params, obs, actions, advantages):
    w1, b1, w2, b2 = params
    logits = torch.tanh(obs @ w1 + b1) @ w2 + b2
    logp = torch.log_softmax(logits, dim=1).gather(1, actions[:, None]).squeeze(1)
    return -(logp * advantages).mean()


def policy_step(state, obs, actions, advantages):
    """(state, batch) -> (loss, new_state): Adam on the policy-gradient loss."""
    grads, loss = grad_and_value(policy_loss)(state["params"], obs, actions, advantages)
    b1, b2 = BETAS
    t = state["t"] + 1
    bc1 = 1 - torch.exp(t * torch.log(torch.tensor(b1)))  # b1 ** t, with t a tensor
    bc2 = 1 - torch.exp(t * torch.log(torch.tensor(b2)))
    new_p, new_m, new_v = [], [], []
    for p, g, m, v in zip(state["params"], grads, state["m"], state["v"]):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - LR * (m / bc1) / (torch.sqrt(v / bc2) + EPS)
        new_p.append(p)
        new_m.append(m)
        new_v.append(v)
    return loss, {"params": tuple(new_p), "m": tuple(new_m), "v": tuple(new_v), "t": t}


def batch(seed: int, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(BATCH, OBS, generator=g)
    actions = torch.randint(0, ACTIONS, (BATCH,), generator=g)
    # The "environment" rewards the action its first features point at.
    advantages = torch.where(actions == obs[:, :ACTIONS].argmax(dim=1), 1.0, -0.3)
    return obs.to(device), actions.to(device), advantages.to(device)


def main(steps: int = 10, fixed_batch: bool = False) -> list[float]:
    import trainkernel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    state = init_state(device=device)
    example = (state, *batch(0, device))
    losses = []
    if device == "cuda":
        step = trainkernel.compile_training(policy_step, example)
        for s in range(steps):
            loss, state = step(state, *batch(0 if fixed_batch else s, device))
            losses.append(float(loss))
    else:
        captured = trainkernel.capture(policy_step, example)
        for s in range(steps):
            loss, state = trainkernel.interpret(captured, state, *batch(0 if fixed_batch else s))
            losses.append(float(loss))
    return losses


if __name__ == "__main__":
    for s, loss in enumerate(main()):
        print(f"step {s}: loss {loss:.6f}")

"""`compile_module`: an `nn.Module`, a loss and a `torch.optim` optimizer -> one kernel per step.

    step = trainkernel.compile_module(model, nn.MSELoss(), torch.optim.AdamW(model.parameters()),
                                      example_batch=(x, y))
    loss = step(x, y)            # on a GPU: forward, loss, backward, update in ONE megakernel
    loss = step.interpret(x, y)  # anywhere: the same update through the CPU interpreter

Each call trains in place, like ``zero_grad(); loss_fn(model(*inputs), target).backward();
optimizer.step()``: the module's parameters and the optimizer's state
(``optimizer.state[p]``: momentum buffers, Adam moments, the step count) are
written, so ``model.state_dict()`` and ``optimizer.state_dict()`` follow eager
training. The last element of the batch is the target; the others are the
model's inputs. The step returns the loss (a 0-d tensor).

How. compile_module writes the training step as a pure function of
``(state, frozen, hyper, *batch)``: ``state`` holds the trained parameters and
the optimizer's buffers, ``frozen`` the parameters that are not trained
(``requires_grad=False``, or in no parameter group), ``hyper`` one dict of 0-d
f32 tensors per parameter group (the learning rate and every other number the
update uses, computed on the host at each call exactly as torch.optim computes
them, in double precision: so a learning-rate scheduler, or any change of a
group's ``lr``, ``betas``, ``momentum``, ``weight_decay``, ... between steps
needs no recompilation). It returns ``(loss, new_state)`` and goes through
`compile_training` (inplace) or `trainkernel.interpret`.

What is supported:

- modules: containers (``nn.Sequential``, ``nn.ModuleList``, ``nn.ModuleDict``)
  and your own ``nn.Module`` classes, traced through; of PyTorch's layers
  ``nn.Linear``, ``nn.Embedding``, ``nn.LayerNorm``, ``nn.RMSNorm`` (with or without affine),
  ``nn.Identity``, ``nn.Flatten``, ``nn.Dropout`` with ``p=0`` (or in eval
  mode), and the activations ``ReLU Tanh Sigmoid GELU SiLU Softplus
  LeakyReLU ELU SELU CELU Hardtanh ReLU6``. A module holding buffers (BatchNorm's
  running statistics) or another of PyTorch's layers is an error naming it;
  an op your own code uses that TrainKernel cannot lower is an error naming the
  op and your source line;
- losses: any Python function of ``(output, target)``, ``nn.MSELoss``,
  ``nn.L1Loss``, ``nn.SmoothL1Loss``, ``nn.HuberLoss``, ``nn.BCEWithLogitsLoss``,
  ``nn.CrossEntropyLoss`` (class indices or probabilities, ``label_smoothing``,
  ``ignore_index``), ``nn.NLLLoss`` (other loss modules are an error naming
  them);
- optimizers: ``torch.optim.SGD`` (momentum, dampening, nesterov, weight_decay,
  maximize), ``Adam`` and ``AdamW`` (betas, eps, weight_decay, amsgrad,
  maximize), several parameter groups, frozen parameters.

The update follows torch.optim's single-tensor implementation operation by
operation (Adam: ``lerp`` of the first moment, ``addcmul`` of the second,
bias corrections from the host's step count, ``addcdiv``). It is not
bit-identical: PyTorch fuses ``a + alpha * b`` into one FMA on CPU, tk rounds
the product first; the difference is checked against the tolerance policy
(4x eager's own error against float64) in tests/test_compile_module.py.

Structural choices are fixed at compile time: whether momentum / weight decay
are zero, nesterov, maximize, amsgrad, and Adam's lerp branch (``1 - beta1 <
0.5``). Changing one of them later is an error that says to compile again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import nn

__all__ = ["compile_module", "ModuleStep", "ModuleError"]


class ModuleError(ValueError):
    """A model, loss or optimizer that compile_module does not support."""


# ------------------------------------------------------------------ what is supported

ACTIVATIONS: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.SiLU, nn.Softplus, nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU,
    nn.Hardtanh, nn.ReLU6,
)
LAYERS: tuple[type[nn.Module], ...] = (
    nn.Linear, nn.Embedding, nn.Identity, nn.Flatten, nn.Dropout, nn.LayerNorm, *((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ()),
    *ACTIVATIONS,
)
CONTAINERS: tuple[type[nn.Module], ...] = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
LOSSES: tuple[type[nn.Module], ...] = (
    nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss, nn.BCEWithLogitsLoss, nn.CrossEntropyLoss, nn.NLLLoss,
)
OPTIMIZERS: tuple[type[torch.optim.Optimizer], ...] = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)


def _is_torch_class(cls: type) -> bool:
    return cls.__module__.startswith("torch.")


def check_module(model: nn.Module, what: str = "model") -> None:
    """Raise ModuleError naming the first submodule compile_module cannot train."""
    if not isinstance(model, nn.Module):
        raise ModuleError(f"{what} must be an nn.Module, got {type(model).__name__}")
    for name, m in model.named_modules():
        where = f"{what}.{name}" if name else what
        kind = type(m).__name__
        buffers = [n for n, _ in m.named_buffers(recurse=False)]
        if buffers:
            raise ModuleError(
                f"{where} ({kind}) holds buffers ({', '.join(buffers)}) that training would have to update or "
                "carry; compile_module trains modules whose only state is their parameters"
                + (" (BatchNorm: use LayerNorm, or track running statistics outside the step)" if "running_mean" in buffers else "")
            )
        if isinstance(m, nn.Dropout) and m.p > 0 and m.training:
            raise ModuleError(
                f"{where} (Dropout, p={m.p}) draws random numbers; a compiled step is deterministic: "
                "use p=0 or put the module in eval mode"
            )
        if isinstance(m, nn.Embedding) and (m.max_norm is not None or m.sparse or m.scale_grad_by_freq):
            raise ModuleError(f"{where} (Embedding): max_norm, sparse and scale_grad_by_freq are not supported")
        if isinstance(m, nn.Flatten) and m.start_dim == 0:
            raise ModuleError(f"{where} (Flatten with start_dim=0) flattens the batch axis")
        if isinstance(m, (*LAYERS, *CONTAINERS)):
            continue
        if _is_torch_class(type(m)):
            supported = ", ".join(sorted(c.__name__ for c in LAYERS))
            raise ModuleError(f"{where} ({kind}) is not supported by compile_module; supported layers: {supported}")
        # Your own module: traced through (its ops are checked by capture).


def check_loss(loss_fn: Callable) -> None:
    if isinstance(loss_fn, nn.Module):
        if isinstance(loss_fn, LOSSES):
            return
        if _is_torch_class(type(loss_fn)) and type(loss_fn).__name__.endswith("Loss"):
            supported = ", ".join(c.__name__ for c in LOSSES)
            raise ModuleError(
                f"loss_fn ({type(loss_fn).__name__}) is not supported by compile_module yet; supported: {supported}, "
                "or any Python function of (output, target)"
            )
        check_module(loss_fn, "loss_fn")
    elif not callable(loss_fn):
        raise ModuleError(f"loss_fn must be callable (output, target) -> loss, got {type(loss_fn).__name__}")


# ------------------------------------------------------------------ optimizer plans


def _scalar(v) -> float:
    return float(v.item()) if isinstance(v, torch.Tensor) else float(v)


@dataclass
class GroupPlan:
    """One parameter group: the parameters it trains and the structure of its update."""

    index: int
    names: list[str]
    structure: dict[str, Any]


@dataclass
class OptimizerPlan:
    kind: str  # "sgd" or "adam"
    groups: list[GroupPlan]
    buffers: tuple[str, ...]  # optimizer.state keys that are tensors of the parameter's shape

    @staticmethod
    def structure_of(kind: str, group: dict) -> dict[str, Any]:
        if kind == "sgd":
            return {
                "momentum": _scalar(group["momentum"]) != 0,
                "nesterov": bool(group["nesterov"]),
                "weight_decay": _scalar(group["weight_decay"]) != 0,
                "maximize": bool(group["maximize"]),
            }
        beta1 = _scalar(group["betas"][0])
        return {
            "weight_decay": _scalar(group["weight_decay"]) != 0,
            "decoupled": bool(group.get("decoupled_weight_decay", False)),
            "amsgrad": bool(group["amsgrad"]),
            "maximize": bool(group["maximize"]),
            "lerp_low": (1 - beta1) < 0.5,  # which of lerp's two formulas PyTorch takes
        }


def plan_optimizer(optimizer, names_of: dict[int, str]) -> OptimizerPlan:
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise ModuleError(f"optimizer must be a torch.optim optimizer, got {type(optimizer).__name__}")
    if type(optimizer) not in OPTIMIZERS:
        supported = ", ".join(f"torch.optim.{c.__name__}" for c in OPTIMIZERS)
        raise ModuleError(f"optimizer {type(optimizer).__name__} is not supported by compile_module; supported: {supported}")
    kind = "sgd" if isinstance(optimizer, torch.optim.SGD) else "adam"
    if optimizer.state:
        raise ModuleError(
            "the optimizer already holds state (it has stepped, or state was loaded); "
            "compile_module needs a fresh optimizer (compile first, then train)"
        )
    groups, seen = [], set()
    for gi, group in enumerate(optimizer.param_groups):
        names = []
        for p in group["params"]:
            if id(p) not in names_of:
                raise ModuleError(f"optimizer param_groups[{gi}] holds a tensor of shape {tuple(p.shape)} that is not a parameter of the model")
            if id(p) in seen:
                raise ModuleError(f"parameter {names_of[id(p)]} is in two parameter groups")
            seen.add(id(p))
            if p.requires_grad:
                names.append(names_of[id(p)])
        if kind == "sgd" and group.get("nesterov") and (_scalar(group["momentum"]) <= 0 or _scalar(group["dampening"]) != 0):
            raise ModuleError("SGD nesterov momentum requires a momentum and zero dampening (as torch.optim.SGD)")
        groups.append(GroupPlan(gi, names, OptimizerPlan.structure_of(kind, group)))
    if kind == "sgd":
        buffers = ("momentum_buffer",)
    else:
        buffers = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    return OptimizerPlan(kind, groups, buffers)


def _buffers_of(plan: OptimizerPlan, group: GroupPlan) -> tuple[str, ...]:
    if plan.kind == "sgd":
        return ("momentum_buffer",) if group.structure["momentum"] else ()
    return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group.structure["amsgrad"] else ("exp_avg", "exp_avg_sq")


# ------------------------------------------------------------------ the pure step


def _sgd_update(p, g, bufs, h, s):
    if s["maximize"]:
        g = -g
    if s["weight_decay"]:
        g = g + h["weight_decay"] * p  # grad.add(param, alpha=weight_decay)
    new_bufs = {}
    if s["momentum"]:
        # buf.mul_(momentum).add_(grad, alpha=1 - dampening); the first step's
        # buf = grad is the same formula with (0, 1) as coefficients.
        buf = bufs["momentum_buffer"] * h["buf_decay"] + h["buf_grad"] * g
        new_bufs["momentum_buffer"] = buf
        g = g + h["momentum"] * buf if s["nesterov"] else buf
    return p + h["neg_lr"] * g, new_bufs  # param.add_(grad, alpha=-lr)


def _adam_update(p, g, bufs, h, s):
    if s["maximize"]:
        g = -g
    if s["weight_decay"]:
        if s["decoupled"]:
            p = p * h["decay"]  # param.mul_(1 - lr * weight_decay)
        else:
            g = g + h["weight_decay"] * p
    m, v = bufs["exp_avg"], bufs["exp_avg_sq"]
    # exp_avg.lerp_(grad, w), w = 1 - beta1: PyTorch's lerp takes one of two formulas.
    if s["lerp_low"]:
        m = m + h["w1"] * (g - m)
    else:
        m = g - (g - m) * h["one_minus_w1"]
    v = v * h["beta2"] + h["w2"] * g * g  # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    new_bufs = {"exp_avg": m, "exp_avg_sq": v}
    if s["amsgrad"]:
        vmax = torch.maximum(bufs["max_exp_avg_sq"], v)
        new_bufs["max_exp_avg_sq"] = vmax
        v = vmax
    denom = torch.sqrt(v) / h["bc2_sqrt"] + h["eps"]
    return p + h["neg_step_size"] * (m / denom), new_bufs  # param.addcdiv_(exp_avg, denom, value=-step_size)


def make_pure_step(model: nn.Module, loss_fn: Callable, plan: OptimizerPlan) -> Callable:
    from torch.func import functional_call, grad_and_value

    update = _sgd_update if plan.kind == "sgd" else _adam_update

    def module_train_step(state, frozen, hyper, *batch):
        params, opt = state["params"], state["opt"]
        *inputs, target = batch

        def loss_of(trainable):
            out = functional_call(model, {**frozen, **trainable}, tuple(inputs))
            return loss_fn(out, target)

        grads, loss = grad_and_value(loss_of)(params)
        new_params, new_opt = dict(params), {}
        for group in plan.groups:
            h = hyper[group.index]
            for name in group.names:
                new_params[name], new_opt[name] = update(params[name], grads[name], opt[name], h, group.structure)
        return loss, {"params": new_params, "opt": new_opt}

    return module_train_step


# ------------------------------------------------------------------ hyper-parameters at call time


def _f32(v: float) -> torch.Tensor:
    return torch.tensor(v, dtype=torch.float32)


def sgd_hyper(group: dict, first: bool) -> dict[str, float]:
    lr, momentum, dampening = _scalar(group["lr"]), _scalar(group["momentum"]), _scalar(group["dampening"])
    return {
        "neg_lr": -lr,
        "weight_decay": _scalar(group["weight_decay"]),
        "momentum": momentum,
        "buf_decay": 0.0 if first else momentum,
        "buf_grad": 1.0 if first else 1 - dampening,
    }


def adam_hyper(group: dict, step: float) -> dict[str, float]:
    lr, wd, eps = _scalar(group["lr"]), _scalar(group["weight_decay"]), _scalar(group["eps"])
    beta1, beta2 = (_scalar(b) for b in group["betas"])
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    return {
        "weight_decay": wd,
        "decay": 1 - lr * wd,
        "w1": 1 - beta1,
        "one_minus_w1": 1 - (1 - beta1),
        "beta2": beta2,
        "w2": 1 - beta2,
        "bc2_sqrt": bias_correction2**0.5,
        "eps": eps,
        "neg_step_size": -step_size,
    }


# ------------------------------------------------------------------ the step object


def _describe_batch(batch) -> str:
    return ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" if isinstance(t, torch.Tensor) else type(t).__name__ for t in batch)


@dataclass
class ModuleStep:
    """A compiled training step of a module (see the module docstring).

    Attributes: `model`, `loss_fn`, `optimizer`; `captured` (the tk program, on
    any machine); `compiled` (the `CompiledTrainingStep`, after the first GPU
    call or `build`); `trained` / `frozen` (parameter names)."""

    model: nn.Module
    loss_fn: Callable
    optimizer: torch.optim.Optimizer
    plan: OptimizerPlan
    pure_step: Callable
    trained: list[str]
    frozen: list[str]
    example: tuple
    captured: Any = None
    compile_options: dict = field(default_factory=dict)
    _compiled: Any = None

    # ---------------------------------------------------------------- arguments

    def _params(self) -> dict[str, nn.Parameter]:
        return dict(self.model.named_parameters(remove_duplicate=False))

    def _check_structure_unchanged(self) -> None:
        for group in self.plan.groups:
            now = OptimizerPlan.structure_of(self.plan.kind, self.optimizer.param_groups[group.index])
            if now != group.structure:
                changed = [k for k in now if now[k] != group.structure[k]]
                raise ModuleError(
                    f"param_groups[{group.index}] changed {', '.join(changed)} since compile_module "
                    f"({group.structure} -> {now}); these decide the kernel's structure: compile again"
                )
        if len(self.optimizer.param_groups) != len(self.plan.groups):
            raise ModuleError("the optimizer's parameter groups changed since compile_module: compile again")

    def _prepare(self, device) -> tuple:
        """Bring optimizer.state up to this step (lazily created as eager does,
        step counts incremented) and build the pure step's arguments."""
        self._check_structure_unchanged()
        params = self._params()
        opt_state: dict[str, dict[str, torch.Tensor]] = {}
        hyper = []
        for group_plan, group in zip(self.plan.groups, self.optimizer.param_groups):
            first = False
            for name in group_plan.names:
                p = params[name]
                st = self.optimizer.state[p]
                if not st:
                    first = True
                    if self.plan.kind == "adam":
                        st["step"] = torch.tensor(0.0, dtype=torch.float32)
                    for b in _buffers_of(self.plan, group_plan):
                        st[b] = torch.zeros_like(p, memory_format=torch.preserve_format)
                if self.plan.kind == "adam":
                    st["step"] += 1
                opt_state[name] = {b: st[b] for b in _buffers_of(self.plan, group_plan)}
            if self.plan.kind == "sgd":
                h = sgd_hyper(group, first)
            else:
                steps = {float(self.optimizer.state[params[n]]["step"]) for n in group_plan.names}
                if len(steps) > 1:
                    raise ModuleError(f"param_groups[{group_plan.index}]: parameters at different step counts {sorted(steps)}")
                h = adam_hyper(group, steps.pop() if steps else 1.0)
            hyper.append({k: _f32(v).to(device) for k, v in h.items()})
        state = {"params": {n: params[n].detach() for n in self.trained}, "opt": opt_state}
        frozen = {n: params[n].detach() for n in self.frozen}
        return state, frozen, tuple(hyper)

    # ---------------------------------------------------------------- running

    def interpret(self, *batch) -> torch.Tensor:
        """One training step through the CPU interpreter; updates the module's
        parameters and the optimizer's state in place; returns the loss."""
        from trainkernel.interpreter import interpret

        self._check_batch(batch)
        state, frozen, hyper = self._prepare("cpu")
        loss, new_state = interpret(self.captured, state, frozen, hyper, *batch)
        self._write_back(state, new_state)
        self._stepped()
        return loss

    def _stepped(self) -> None:
        # What optimizer.step()'s wrapper records, so that an lr scheduler sees
        # that the optimizer stepped before it.
        self.optimizer._opt_called = True

    def __call__(self, *batch) -> torch.Tensor:
        """One training step on the GPU, in one megakernel; updates the module's
        parameters and the optimizer's state in place; returns the loss."""
        self._check_batch(batch)
        compiled = self.build_kernel()
        device = next(iter(self._params().values())).device
        if device.type != "cuda":
            raise RuntimeError(
                f"the model's parameters are on {device}: move the model (and create the optimizer) on a CUDA "
                "device to run the kernel, or use step.interpret(...) on CPU"
            )
        state, frozen, hyper = self._prepare(device)
        loss, _ = compiled(state, frozen, hyper, *batch)  # in place: state IS the parameters and buffers
        self._stepped()
        return loss

    def build_kernel(self):
        """The `CompiledTrainingStep` of this step (compiled on first use)."""
        if self._compiled is None:
            from trainkernel.api import compile_training

            opts = dict(self.compile_options)
            build = opts.pop("build", None)
            if build is None:
                build = torch.cuda.is_available()
            self._compiled = compile_training(self.pure_step, self.example, inplace=True, build=build, **opts)
        return self._compiled

    def _check_batch(self, batch) -> None:
        want = self.example[3:]
        if len(batch) != len(want):
            raise TypeError(f"the step takes {len(want)} batch tensors (inputs..., target), got {len(batch)}")
        for i, (b, w) in enumerate(zip(batch, want)):
            if not isinstance(b, torch.Tensor) or tuple(b.shape) != tuple(w.shape) or b.dtype != w.dtype:
                raise ValueError(
                    f"batch[{i}]: expected {tuple(w.shape)} {str(w.dtype).replace('torch.', '')}, got "
                    f"{_describe_batch([b])} (compile_module traced the example batch's shapes and dtypes)"
                )

    def _write_back(self, state, new_state) -> None:
        with torch.no_grad():
            for name, t in state["params"].items():
                t.copy_(new_state["params"][name])
            for name, bufs in state["opt"].items():
                for b, t in bufs.items():
                    t.copy_(new_state["opt"][name][b])


def compile_module(
    model: nn.Module,
    loss_fn: Callable,
    optimizer: torch.optim.Optimizer,
    example_batch: Sequence[torch.Tensor],
    **compile_options,
) -> ModuleStep:
    """Compile one training step of `model` with `loss_fn` and `optimizer` (see
    the module docstring). `example_batch` is ``(*inputs, target)``; only its
    shapes and dtypes count. `compile_options` go to `compile_training`
    (``build``: default nvcc only where a CUDA device is visible; ``cache_dir``,
    ``arch``, ``resident``, ...). Raises ModuleError naming an unsupported
    module, loss or optimizer, and UnsupportedOpError naming an op your code
    uses that TrainKernel cannot lower."""
    from trainkernel.frontend.capture import capture

    check_module(model)
    check_loss(loss_fn)
    batch = tuple(example_batch) if isinstance(example_batch, (tuple, list)) else (example_batch,)
    if len(batch) < 2:
        raise ModuleError("example_batch must be (*inputs, target): at least one input and the target")
    if not all(isinstance(t, torch.Tensor) for t in batch):
        raise ModuleError(f"example_batch holds {_describe_batch(batch)}: every element must be a tensor")
    named = list(model.named_parameters(remove_duplicate=False))
    names_of: dict[int, str] = {}
    for name, p in named:
        if id(p) in names_of:
            raise ModuleError(f"parameters {names_of[id(p)]} and {name} are one tensor (tied weights are not supported yet)")
        names_of[id(p)] = name
    plan = plan_optimizer(optimizer, names_of)
    trained = [n for g in plan.groups for n in g.names]
    if not trained:
        raise ModuleError("no parameter is trained: every parameter is frozen or in no optimizer group")
    frozen = [n for n, _ in named if n not in set(trained)]
    for name, p in named:
        if p.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ModuleError(f"parameter {name} is {p.dtype}; compile_module trains f32, bf16 and f16 parameters")

    def meta(t: torch.Tensor) -> torch.Tensor:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    params = dict(named)
    state = {
        "params": {n: meta(params[n]) for n in trained},
        "opt": {n: {b: meta(params[n]) for b in _buffers_of(plan, g)} for g in plan.groups for n in g.names},
    }
    frozen_meta = {n: meta(params[n]) for n in frozen}
    hyper = []
    for g, group in zip(plan.groups, optimizer.param_groups):
        keys = sgd_hyper(group, True) if plan.kind == "sgd" else adam_hyper(group, 1.0)
        hyper.append({k: torch.empty((), dtype=torch.float32, device="meta") for k in keys})
    example = (state, frozen_meta, tuple(hyper), *(meta(t) for t in batch))
    pure = make_pure_step(model, loss_fn, plan)
    step = ModuleStep(
        model=model,
        loss_fn=loss_fn,
        optimizer=optimizer,
        plan=plan,
        pure_step=pure,
        trained=trained,
        frozen=frozen,
        example=example,
        compile_options=dict(compile_options),
    )
    step.captured = capture(pure, example)
    if compile_options.get("build") or (compile_options.get("build") is None and torch.cuda.is_available()):
        step.build_kernel()
    return step

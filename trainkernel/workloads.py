"""The canonical training workloads: used by the tests, the README example and
the benchmark harness.

Every workload is an MLP ``relu(...relu(x @ W1 + b1)...) @ Wn + bn`` trained with
an MSE loss and plain SGD, written as one pure ``torch.func`` step

    step(params, x, y) -> (loss, grads, new_params)

- ``params`` is a tuple ``(W1, b1, W2, b2, ...)`` of FP32 master tensors, ``W``
  of shape ``(in, out)`` so a layer is ``h @ W + b``;
- the forward pass casts ``x`` and the parameters to the compute dtype (bf16
  by default; f32 or f16), runs the products, bias adds and relus there, and
  casts the network output to f32 for the loss ``mean((out - y)**2)``;
- ``grad_and_value`` differentiates through the casts, so ``grads`` are f32,
  and the update ``p - lr * g`` is f32.

The five workloads of ``shared/GPU.md`` (2-layer, sizes (B, I, H, O)) plus a
4-layer MLP (batch 128, all widths 256). Regression targets come from a fixed
random teacher network of the same shape (so the loss means something); the
classification head trains on one-hot targets (the teacher's argmax), still
with the MSE loss. ``scaled``/``with_sizes`` give small copies for CPU tests.

``make_adamw_step`` is an AdamW variant of the same model (optional example:
dict state, 0-d tensor inputs, sqrt and div).

A `Recipe` says how a model trains (loss: MSE or cross-entropy on integer
class labels; optimizer: SGD, Adam or AdamW) and `make_recipe_step` writes
its pure step: SGD steps are ``make_sgd_step``'s; Adam/AdamW steps are

    step(state, x, y) -> (loss, new_state)

with ``state = {"params", "exp_avg", "exp_avg_sq", "beta_powers"}``, where
``beta_powers = (beta1**t, beta2**t)`` (0-d tensors, ``(1, 1)`` at t = 0) are
updated by the step itself, so a captured graph of many steps needs no host
input per step (torch.optim's ``capturable=True`` keeps its step count on the
device for the same reason). ``TWINS`` are the benchmark harness's twins of
three workloads: the same model with AdamW + cross-entropy (classification,
mlp4) or Adam + MSE (online).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import torch
from torch.func import grad_and_value

from trainkernel import elements

Params = tuple[torch.Tensor, ...]
StepFn = Callable[[Params, torch.Tensor, torch.Tensor], tuple[torch.Tensor, Params, Params]]

COMPUTE_DTYPES: dict[str, torch.dtype] = {e.name: e.torch for e in elements.COMPUTE}
"""f32, bf16, f16 by their short names (`trainkernel.elements.COMPUTE`)."""

# Seed of the teacher network that defines every regression/classification target.
_TEACHER_SEED = 20261129


def dtype_short(dtype: torch.dtype) -> str:
    """f32 / bf16 / f16 (the spelling used in step names and test ids)."""
    e = elements.from_torch(dtype)
    if e is None or e.name not in COMPUTE_DTYPES:
        raise ValueError(f"compute dtype must be one of {list(COMPUTE_DTYPES)}, got {dtype}")
    return e.name


def parse_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """A compute dtype from a torch dtype or a name (`bf16`, `float16`, `fp32`, `half`, ...)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    e = elements.from_name(dtype)
    if e is None or e.name not in COMPUTE_DTYPES:
        raise ValueError(f"unknown compute dtype {dtype!r}; choose one of {list(COMPUTE_DTYPES)}")
    return e.torch


def mlp_forward(params: Sequence[torch.Tensor], x: torch.Tensor, compute_dtype: torch.dtype) -> torch.Tensor:
    """relu between layers, none after the last; everything in compute_dtype."""
    h = x.to(compute_dtype)
    n = len(params) // 2
    for i in range(n):
        h = h @ params[2 * i].to(compute_dtype) + params[2 * i + 1].to(compute_dtype)
        if i + 1 < n:
            h = torch.relu(h)
    return h


def mlp_loss(criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], doc: str):
    """The loss of the MLP's output (cast to `loss_dtype`: f32; f64 for the
    benchmark's float64 reference) against a target: `criterion(out, target)`."""

    def loss(params: Sequence[torch.Tensor], x: torch.Tensor, target: torch.Tensor, compute_dtype: torch.dtype,
             loss_dtype: torch.dtype = torch.float32) -> torch.Tensor:
        out = mlp_forward(params, x, compute_dtype).to(loss_dtype)
        return criterion(out, target.to(loss_dtype) if target.is_floating_point() else target)

    loss.__doc__ = doc
    return loss


mse_loss = mlp_loss(lambda out, y: ((out - y) ** 2).mean(), "MSE of the MLP's output against `y`.")
cross_entropy_loss = mlp_loss(torch.nn.functional.cross_entropy,
                              "Cross-entropy of the MLP's logits against integer class labels.")


LOSSES: dict[str, Callable[..., torch.Tensor]] = {"mse": mse_loss, "cross_entropy": cross_entropy_loss}
"""A recipe's loss by name: (params, x, y, compute_dtype, loss_dtype) -> 0-d loss."""


def make_sgd_step(lr: float, compute_dtype: torch.dtype, loss_dtype: torch.dtype = torch.float32) -> StepFn:
    """The pure SGD step ``step(params, x, y) -> (loss, grads, new_params)`` of the
    MLP: `mse_loss` differentiated with ``grad_and_value``, then ``p - lr * g``.
    The one definition of the step: `Workload.make_step` (compute dtype, f32 loss)
    and `Workload.reference_step` (all float64) use it, and so can the benchmark
    harness (``make_sgd_step(lr, compute_dtype, master_dtype)``)."""

    def loss_fn(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return mse_loss(params, x, y, compute_dtype, loss_dtype)

    def step(params: Params, x: torch.Tensor, y: torch.Tensor):
        grads, loss = grad_and_value(loss_fn)(params, x, y)
        new_params = tuple(p - lr * g for p, g in zip(params, grads))
        return loss, grads, new_params

    return step


def _adam_update(p, g, m, v, *, lr, b1, b2, eps, weight_decay, decoupled, step_size, bc2_sqrt):
    """One parameter's Adam / AdamW update, torch.optim's formulas unfused."""
    if decoupled:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    m = m * b1 + g * (1 - b1)
    v = v * b2 + g * g * (1 - b2)
    denom = torch.sqrt(v) / bc2_sqrt + eps
    return p - step_size * (m / denom), m, v


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a model trains: its loss and its optimizer (with the optimizer's
    hyper-parameters; the learning rate is the workload's)."""

    loss: str = "mse"  # a key of LOSSES
    optimizer: str = "sgd"  # sgd, adam or adamw
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; choose one of {list(LOSSES)}")
        if self.optimizer not in ("sgd", "adam", "adamw"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose sgd, adam or adamw")

    @property
    def name(self) -> str:
        return f"{self.optimizer}-{'ce' if self.loss == 'cross_entropy' else self.loss}"

    @property
    def labels(self) -> bool:
        """Targets are integer class labels (cross-entropy), not float tensors."""
        return self.loss == "cross_entropy"

    def init_state(self, params: Params):
        """The optimizer's state around `params` (SGD: the parameters themselves)."""
        if self.optimizer == "sgd":
            return tuple(params)
        one = torch.ones((), dtype=params[0].dtype, device=params[0].device)
        return {
            "params": tuple(params),
            "exp_avg": tuple(torch.zeros_like(p) for p in params),
            "exp_avg_sq": tuple(torch.zeros_like(p) for p in params),
            "beta_powers": (one.clone(), one.clone()),
        }

    def state_names(self, param_names: Sequence[str]) -> list[str]:
        """Names of the state's leaves, in pytree order (`init_state`'s structure)."""
        from torch.utils import _pytree as pytree

        names = tuple(f"param.{n}" for n in param_names)
        if self.optimizer == "sgd":
            return list(names)
        tree = {  # init_state's structure, with names for tensors
            "params": names,
            "exp_avg": tuple(f"exp_avg.{n}" for n in param_names),
            "exp_avg_sq": tuple(f"exp_avg_sq.{n}" for n in param_names),
            "beta_powers": ("beta_power.1", "beta_power.2"),
        }
        return pytree.tree_leaves(tree)

    def output_names(self, param_names: Sequence[str]) -> list[str]:
        """Names of every leaf a step returns: the loss, SGD's gradients, the new state."""
        grads = [f"grad.{n}" for n in param_names] if self.optimizer == "sgd" else []
        return ["loss", *grads, *self.state_names(param_names)]


SGD_MSE = Recipe()


def make_recipe_step(recipe: Recipe, lr: float, compute_dtype: torch.dtype, loss_dtype: torch.dtype = torch.float32):
    """The pure step of `recipe` (module docstring): SGD ``(loss, grads, new_params)``
    with MSE is `make_sgd_step`'s; otherwise ``step(state, x, y) -> (loss, new_state)``."""
    loss_of = LOSSES[recipe.loss]

    def loss_fn(params, x, y):
        return loss_of(params, x, y, compute_dtype, loss_dtype)

    if recipe.optimizer == "sgd":
        if recipe.loss == "mse":
            return make_sgd_step(lr, compute_dtype, loss_dtype)

        def sgd_step(params, x, y):
            grads, loss = grad_and_value(loss_fn)(params, x, y)
            return loss, grads, tuple(p - lr * g for p, g in zip(params, grads))

        return sgd_step
    b1, b2 = recipe.betas
    hyper = dict(lr=lr, b1=b1, b2=b2, eps=recipe.eps, weight_decay=recipe.weight_decay,
                 decoupled=recipe.optimizer == "adamw")

    def adam_step(state, x, y):
        grads, loss = grad_and_value(loss_fn)(state["params"], x, y)
        p1, p2 = state["beta_powers"]
        p1, p2 = p1 * b1, p2 * b2
        bc1, bc2 = 1 - p1, 1 - p2
        new_p, new_m, new_v = [], [], []
        for p, g, m, v in zip(state["params"], grads, state["exp_avg"], state["exp_avg_sq"]):
            p, m, v = _adam_update(p, g, m, v, step_size=lr / bc1, bc2_sqrt=torch.sqrt(bc2), **hyper)
            new_p.append(p)
            new_m.append(m)
            new_v.append(v)
        return loss, {"params": tuple(new_p), "exp_avg": tuple(new_m), "exp_avg_sq": tuple(new_v),
                      "beta_powers": (p1, p2)}

    return adam_step


@dataclasses.dataclass(frozen=True)
class Workload:
    """An MLP training problem; ``widths`` = (in, hidden..., out)."""

    name: str
    batch: int
    widths: tuple[int, ...]
    task: str = "regression"  # or "classification" (one-hot targets, widths[-1] classes)
    lr: float = 1e-3
    description: str = ""
    recipe: Recipe = SGD_MSE  # loss and optimizer (SGD + MSE: the suite's six)
    twin_of: str | None = None  # a twin: the workload it is the same model as, trained by another recipe

    # ----------------------------------------------------------- shapes

    @property
    def sizes(self) -> tuple[int, ...]:
        """(batch, in, hidden..., out): GPU.md's (B, I, H, O) for 2-layer MLPs."""
        return (self.batch, *self.widths)

    @property
    def layers(self) -> int:
        return len(self.widths) - 1

    def param_shapes(self) -> list[tuple[int, ...]]:
        shapes: list[tuple[int, ...]] = []
        for fan_in, fan_out in zip(self.widths[:-1], self.widths[1:]):
            shapes += [(fan_in, fan_out), (fan_out,)]
        return shapes

    def flops_per_step(self) -> int:
        """Matrix-product FLOPs of forward + backward (the first layer needs no
        input gradient: 2 products, the others 3)."""
        total = 0
        for i, (a, b) in enumerate(zip(self.widths[:-1], self.widths[1:])):
            total += (2 if i == 0 else 3) * 2 * self.batch * a * b
        return total

    def config(self) -> dict:
        """The workload as JSON (the benchmark harness records it)."""
        out = {"batch": self.batch, "widths": list(self.widths), "layers": self.layers, "task": self.task,
               "lr": self.lr, "description": self.description, "recipe": self.recipe.name}
        if self.twin_of is not None:
            out["twin_of"] = self.twin_of
        return out

    def capped(self, cap: int) -> Workload:
        """A smaller copy for CPU tests: batch and inner widths capped at ``cap``;
        the output width (the number of classes) is kept."""
        widths = tuple(min(w, cap) for w in self.widths[:-1]) + (self.widths[-1],)
        return dataclasses.replace(self, batch=min(self.batch, cap), widths=widths)

    def with_sizes(self, batch: int | None = None, widths: Sequence[int] | None = None) -> Workload:
        """A copy with other sizes (same name, task, lr)."""
        widths = tuple(int(w) for w in widths) if widths is not None else self.widths
        if len(widths) < 2 or (self.task == "classification" and widths[-1] != self.widths[-1]):
            raise ValueError(f"bad widths {widths} for {self.name}")
        return dataclasses.replace(self, batch=int(batch) if batch is not None else self.batch, widths=widths)

    def scaled(self, factor: float) -> Workload:
        """Batch and widths multiplied by ``factor`` (rounded, at least 1); the
        number of classes of a classification head is kept."""
        scale = lambda n: max(1, int(round(n * factor)))  # noqa: E731
        widths = tuple(scale(w) for w in self.widths)
        if self.task == "classification":
            widths = widths[:-1] + (self.widths[-1],)
        return dataclasses.replace(self, batch=scale(self.batch), widths=widths)

    # ------------------------------------------------------------- data

    def init_params(self, seed: int = 0, device: torch.device | str = "cpu") -> Params:
        """FP32 master parameters, uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) like
        nn.Linear; drawn on the CPU from one seeded generator, then moved."""
        gen = torch.Generator().manual_seed(seed)
        return tuple(p.to(device) for p in init_mlp_params(self.widths, gen, torch.float32))

    def make_batches(
        self, n: int, seed: int = 0, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``n`` batches ``(x, y)`` in ``dtype``: x ~ N(0, 1); y from the fixed
        teacher (normalized regression targets, or one-hot classes)."""
        gen = torch.Generator().manual_seed(seed + 7919)
        teacher = [t * 2.0 for t in init_mlp_params(self.widths, torch.Generator().manual_seed(_TEACHER_SEED), torch.float64)]
        batches = []
        for _ in range(n):
            x = torch.randn(self.batch, self.widths[0], generator=gen, dtype=torch.float64)
            batches.append((x.to(dtype).to(device), self.targets(mlp_forward(teacher, x, torch.float64), dtype, device)))
        return batches

    def targets(self, teacher_out: torch.Tensor, dtype: torch.dtype, device) -> torch.Tensor:
        """The targets of a batch from the teacher's float64 output: class labels
        (int64) for a cross-entropy recipe, one-hot rows (in `dtype`) for an MSE
        classification head, else the output normalized to unit std (in `dtype`)."""
        if self.recipe.labels:
            return teacher_out.argmax(dim=-1).to(device)
        if self.task == "classification":
            return torch.nn.functional.one_hot(teacher_out.argmax(dim=-1), self.widths[-1]).to(dtype).to(device)
        return (teacher_out / teacher_out.std().clamp_min(1e-6)).to(dtype).to(device)

    def example_args(self, device: torch.device | str = "meta", dtype: torch.dtype = torch.float32):
        """(state, x, y) with the right shapes and dtypes (meta by default: for capture);
        the state is the parameters for SGD, `Recipe.init_state`'s dict otherwise."""
        params = tuple(torch.empty(s, dtype=torch.float32, device=device) for s in self.param_shapes())
        x = torch.empty(self.batch, self.widths[0], dtype=dtype, device=device)
        if self.recipe.labels:
            y = torch.empty(self.batch, dtype=torch.int64, device=device)
        else:
            y = torch.empty(self.batch, self.widths[-1], dtype=dtype, device=device)
        return self.recipe.init_state(params), x, y

    def init_state(self, seed: int = 0, device: torch.device | str = "cpu"):
        """`init_params` wrapped in the recipe's optimizer state."""
        return self.recipe.init_state(self.init_params(seed, device))

    def param_names(self) -> list[str]:
        """W1, b1, W2, b2, ... in the order of `param_shapes`."""
        return [f"{'W' if k % 2 == 0 else 'b'}{k // 2 + 1}" for k in range(2 * self.layers)]

    # ------------------------------------------------------------ steps

    def _step_name(self, dtype_name: str) -> str:
        kind = "sgd" if self.recipe == SGD_MSE else self.recipe.name
        name = self.name if self.twin_of is not None else f"{self.name}_{kind}"  # (a twin's name says its recipe)
        return f"{name}_{dtype_name}".replace("-", "_")

    def make_step(self, compute_dtype: torch.dtype | str = torch.bfloat16) -> StepFn:
        """The pure step of the workload's recipe: for SGD + MSE
        ``step(params, x, y) -> (loss, grads, new_params)`` (`make_recipe_step`)."""
        compute_dtype = parse_dtype(compute_dtype)
        step = make_recipe_step(self.recipe, self.lr, compute_dtype)
        step.__name__ = step.__qualname__ = self._step_name(dtype_short(compute_dtype))
        return step

    def reference_step(self) -> StepFn:
        """The same step computed entirely in float64 (model, loss and update):
        the reference the correctness checks measure errors against."""
        step = make_recipe_step(self.recipe, self.lr, torch.float64, torch.float64)
        step.__name__ = step.__qualname__ = self._step_name("f64")
        return step

    def make_adamw_step(
        self,
        compute_dtype: torch.dtype | str = torch.bfloat16,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ):
        """AdamW on the same model (an example of a richer step):

            step(state, x, y, bias_correction) -> (loss, new_state)

        ``state`` = {"params", "exp_avg", "exp_avg_sq"} (tuples of f32 tensors, see
        ``init_adamw_state``); ``bias_correction`` = (1 - b1**t, 1 - b2**t) as 0-d
        f32 tensors (``adamw_bias_correction(t)``), inputs so one captured
        step serves every t. Same update as torch.optim.AdamW, unfused.
        """
        compute_dtype = parse_dtype(compute_dtype)
        b1, b2 = betas

        def loss_fn(params, x, y):
            return mse_loss(params, x, y, compute_dtype)

        def step(state, x, y, bias_correction):
            params = state["params"]
            grads, loss = grad_and_value(loss_fn)(params, x, y)
            bc1, bc2 = bias_correction
            step_size = lr / bc1
            bc2_sqrt = torch.sqrt(bc2)
            new_p, new_m, new_v = [], [], []
            for p, g, m, v in zip(params, grads, state["exp_avg"], state["exp_avg_sq"]):
                p, m, v = _adam_update(p, g, m, v, lr=lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay,
                                       decoupled=True, step_size=step_size, bc2_sqrt=bc2_sqrt)
                new_p.append(p)
                new_m.append(m)
                new_v.append(v)
            return loss, {"params": tuple(new_p), "exp_avg": tuple(new_m), "exp_avg_sq": tuple(new_v)}

        step.__name__ = step.__qualname__ = f"{self.name}_adamw_{dtype_short(compute_dtype)}"
        return step

    def init_adamw_state(self, seed: int = 0, device: torch.device | str = "cpu") -> dict[str, Params]:
        params = self.init_params(seed, device)
        return {
            "params": params,
            "exp_avg": tuple(torch.zeros_like(p) for p in params),
            "exp_avg_sq": tuple(torch.zeros_like(p) for p in params),
        }


def adamw_bias_correction(t: int, betas: tuple[float, float] = (0.9, 0.999), device="cpu"):
    """(1 - b1**t, 1 - b2**t) as 0-d f32 tensors, for step t >= 1."""
    return tuple(torch.tensor(1.0 - b**t, dtype=torch.float32, device=device) for b in betas)


def init_mlp_params(widths: Sequence[int], gen: torch.Generator, dtype: torch.dtype) -> list[torch.Tensor]:
    """(W1, b1, W2, b2, ...) drawn from `gen` like nn.Linear (uniform in
    +-1/sqrt(fan_in), in float64, then cast to `dtype`)."""
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        params.append(((torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound).to(dtype))
        params.append(((torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound).to(dtype))
    return params


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("tiny", 16, (32, 64, 8), description="2-layer MLP (B, I, H, O) = (16, 32, 64, 8)"),
        Workload("online", 64, (128, 256, 16), description="2-layer MLP (B, I, H, O) = (64, 128, 256, 16)"),
        Workload("small", 256, (512, 1024, 64), description="2-layer MLP (B, I, H, O) = (256, 512, 1024, 64)"),
        Workload("medium", 1024, (1024, 4096, 256), description="2-layer MLP (B, I, H, O) = (1024, 1024, 4096, 256)"),
        Workload(
            "classification",
            64,
            (256, 512, 10),
            task="classification",
            description="classification head, 10 classes, one-hot targets: (B, I, H, O) = (64, 256, 512, 10)",
        ),
        Workload("mlp4", 128, (256, 256, 256, 256, 256), description="4-layer MLP, batch 128, all widths 256"),
    )
}

LARGE = Workload("large", 2048, (2048, 8192, 2048),
                 description="2-layer MLP (B, I, H, O) = (2048, 2048, 8192, 2048): the GEMMs dominate completely")
"""The harness's GEMM-bound step (issue 10), not one of WORKLOADS: the CPU
tests that walk every workload would interpret ~0.4 TFLOP for it."""

ADAMW = Recipe("cross_entropy", "adamw", weight_decay=1e-2)
ADAM = Recipe("mse", "adam")


def _twin(name: str, of: str, recipe: Recipe, what: str, **changes) -> Workload:
    base = WORKLOADS[of]
    return dataclasses.replace(base, name=name, recipe=recipe, twin_of=of,
                               description=f"{base.description}; {what}", **changes)


TWINS: dict[str, Workload] = {
    w.name: w
    for w in (
        _twin("classification-adamw-ce", "classification", ADAMW, "AdamW + cross-entropy on class labels"),
        # lr 2e-4: at 1e-3 bf16 eager drifts 0.14 from float64 in 100 steps (the harness's ceiling is 0.05)
        _twin("mlp4-adamw-ce", "mlp4", ADAMW, "AdamW + cross-entropy on 256 class labels", task="classification",
              lr=2e-4),
        _twin("online-adam", "online", ADAM, "Adam + MSE"),
    )
}
"""The benchmark harness's twins: each is `twin_of`'s model trained by another
recipe (AdamW + cross-entropy, or Adam); the harness reports how much of its
SGD/MSE twin's speedup each keeps."""

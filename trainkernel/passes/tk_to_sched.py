"""`tk-to-sched`: bufferize a (fused) tk function and schedule it into phases.

Bufferization. Function arguments become the program's input buffers. Each
function result gets an output buffer, except a state update (a result whose
`tk.updates = i` attribute names the parameter argument it replaces) when
`inplace=true`: that value is computed into a staged arena buffer and a
`sched.commit` copies it over argument i after the last reader of the old
value; `sched-inplace-state` later removes the staging where it can prove it
unnecessary. Every other value gets a `sched.buffer` in the arena; a
`tk.reshape` is a `sched.view` of its source's buffer (no copy).

Scheduling. Each compute's phase is one more than the latest phase of the
computes producing its inputs (as soon as possible), so independent ops share a
phase; one `sched.barrier grid` separates consecutive phases because, by that
rule, every phase after the first reads something the previous one wrote.
With `sink_sources`, a compute without a product that depends on nothing but
the function's arguments (a weight's cast, a label mask and its count, the
optimizer's step powers) and that the second phase does not read leaves the
first phase for the earliest later one, where that moves nothing else: the
first phase then holds only what the second reads (perf-log steps 79 and 84:
a chain of launches that carries the casts skips a first phase of nothing but
them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import sched, tk
from trainkernel.passes.tk_mark_state_updates import UPDATES_ATTR


@dataclass(eq=False)
class Work:
    """One future sched.compute: its body, what it reads and what it writes."""

    inputs: list[SSAValue]  # tk values read
    outputs: list[SSAValue]  # tk values written
    body: Region
    phase: int = 0
    copy_target: SSAValue | None = None  # set for a copy into a result buffer


@dataclass
class Lowering:
    func_op: func.FuncOp
    inplace: bool
    sink_sources: bool = False
    block: Block = field(init=False)
    buffer: dict[SSAValue, SSAValue] = field(default_factory=dict)  # tk value -> memref value
    writer: dict[SSAValue, Work] = field(default_factory=dict)  # tk value -> work computing it
    header: list[Operation] = field(default_factory=list)  # buffers and views, in order
    works: list[Work] = field(default_factory=list)
    commits: list[tuple[SSAValue, int]] = field(default_factory=list)  # (staged value, arg index)

    def __post_init__(self) -> None:
        arg_types = [sched.memref_type_of(a.type) for a in self.func_op.args]
        self.block = Block(arg_types=arg_types)
        for a, b in zip(self.func_op.args, self.block.args):
            self.buffer[a] = b
            b.name_hint = a.name_hint

    # ---------------------------------------------------------------- buffers

    def new_buffer(self, value: SSAValue) -> SSAValue:
        op = sched.BufferOp(sched.memref_type_of(value.type))
        self.header.append(op)
        op.result.name_hint = value.name_hint
        return op.result

    def view(self, source: SSAValue, tensor_type) -> SSAValue:
        want = sched.memref_type_of(tensor_type)
        if source.type == want:
            return source
        op = sched.ViewOp(source, want)
        self.header.append(op)
        return op.result

    def bind(self, value: SSAValue, buf: SSAValue) -> None:
        """Make `buf` the storage of `value`, pushing it back through reshapes so
        the producer writes straight into it."""
        self.buffer[value] = buf
        while isinstance(value.owner, tk.ReshapeOp):
            src = value.owner.input
            if src in self.buffer:
                break
            self.buffer[src] = self.view(buf, src.type)
            value = src

    def buffer_of(self, value: SSAValue) -> SSAValue:
        if value in self.buffer:
            return self.buffer[value]
        if isinstance(value.owner, tk.ReshapeOp):
            buf = self.view(self.buffer_of(value.owner.input), value.type)
        else:
            buf = self.new_buffer(value)
        self.buffer[value] = buf
        return buf

    # ------------------------------------------------------------------- work

    def work_for(self, op: Operation) -> Work | None:
        if isinstance(op, tk.ReshapeOp | func.ReturnOp) or isinstance(op, tk.CONSTANT_OPS):
            return None  # views alias, constants (fills, iotas) are cloned into their readers
        if isinstance(op, tk.FusedOp):
            body = op.detach_region(op.body)
            return Work(list(op.inputs), list(op.outputs), body)
        # A lone op: wrap it in a body of its own; fills it reads are cloned in.
        inputs, body = tk.outline([op], list(op.results))
        return Work(inputs, list(op.results), body)

    def copy_work(self, value: SSAValue, target: SSAValue) -> Work:
        """A compute that copies `value` into buffer `target` (a result that is
        an argument or a constant, or one value returned twice)."""
        inputs, body = tk.outline([], [value])
        return Work(inputs, [], body, copy_target=target)

    def run(self) -> sched.ProgramOp:
        f = self.func_op
        ret = f.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        res_attrs = list(f.res_attrs.data) if f.res_attrs is not None else [None] * len(ret.arguments)
        num_inputs = len(self.block.args)

        # Results: decide every result's storage before anything else is placed.
        results: list[int] = []
        copies: list[tuple[SSAValue, SSAValue]] = []
        for r, (value, attrs) in enumerate(zip(ret.arguments, res_attrs)):
            update = attrs.data.get(UPDATES_ATTR) if attrs is not None else None
            if self.inplace and isinstance(update, IntegerAttr):
                arg = update.value.data
                if not 0 <= arg < num_inputs:
                    raise DiagnosticException(f"result {r}: {UPDATES_ATTR} = {arg} is not an argument index")
                if value.type != f.args[arg].type:
                    raise DiagnosticException(
                        f"result {r} updates argument {arg} but has type {value.type}, not {f.args[arg].type}"
                    )
                results.append(arg)
                if value is f.args[arg]:
                    continue  # the state is returned unchanged: nothing to write
                if self._computed(value) and not self._view_of_bound(value):
                    if value not in self.buffer:
                        self.bind(value, self.new_buffer(value))
                    staged = self.buffer[value]
                else:
                    staged = self.new_buffer(value)
                    copies.append((value, staged))
                self.commits.append((staged, arg))
                continue
            out = self.block.insert_arg(sched.memref_type_of(value.type), len(self.block.args))
            out.name_hint = f"out{r}"
            results.append(len(self.block.args) - 1)
            if self._computed(value) and value not in self.buffer and not self._view_of_bound(value):
                self.bind(value, out)
            else:
                copies.append((value, out))

        # Works in program order, then copies of results that are not computed here.
        for op in f.body.block.ops:
            w = self.work_for(op)
            if w is not None:
                self.works.append(w)
                for v in w.outputs:
                    self.writer[v] = w
        for value, target in copies:
            self.works.append(self.copy_work(value, target))

        # Phases: as soon as possible.
        self._schedule()
        if self.sink_sources:
            self._sink_sources()
        nphases = max((w.phase for w in self.works), default=-1) + 1

        phases = [sched.PhaseOp() for _ in range(nphases)]
        for w in self.works:
            ins = [self.buffer_of(v) for v in w.inputs]
            outs = [w.copy_target] if w.copy_target is not None else [self.buffer_of(v) for v in w.outputs]
            phases[w.phase].body.block.add_op(sched.ComputeOp(ins, outs, w.body))

        # Staged state commits go after the last reader of the old value.
        for staged, arg in self.commits:
            state = self.block.args[arg]
            last = max(
                [w.phase for w in self.works for v in w.inputs if sched.root_buffer(self.buffer_of(v)) is state]
                + [self._write_phase(staged)],
                default=-1,
            )
            p = last + 1
            while p >= len(phases):
                phases.append(sched.PhaseOp())
            phases[p].body.block.add_op(sched.CommitOp(staged, state))

        self.block.add_ops(self.header)
        for i, phase in enumerate(phases):
            if i:
                self.block.add_op(sched.BarrierOp("grid"))
            self.block.add_op(phase)
        return sched.ProgramOp(f.sym_name.data, num_inputs, results, Region(self.block))

    def _view_of_bound(self, value: SSAValue) -> bool:
        """Whether `value` reshapes a value that already has its own storage (a
        result bound earlier): then it needs a copy into its result buffer."""
        while isinstance(value.owner, tk.ReshapeOp):
            value = value.owner.input
            if value in self.buffer:
                return True
        return False

    def _computed(self, value: SSAValue) -> bool:
        """Whether some compute writes this value (or the value it reshapes)."""
        while isinstance(value.owner, tk.ReshapeOp):
            value = value.owner.input
        owner = value.owner
        if not isinstance(owner, Operation) or isinstance(owner, tk.CONSTANT_OPS):
            return False
        return True

    def _schedule(self, later: frozenset[int] = frozenset()) -> None:
        """Each compute's phase as soon as possible (program order is a topological
        order); the computes in `later` (ids) at phase 1 at the earliest."""
        for w in self.works:
            w.phase = 1 + max((self._phase_of(v) for v in w.inputs), default=-1)
            if id(w) in later:
                w.phase = max(w.phase, 1)

    def _sink_sources(self) -> None:
        """Move each compute of phase 0 that depends on nothing but the arguments (no
        product of its own; it reads arguments, or values only such computes make)
        and that no other compute needs in phase 1 out of phase 0: the phases are
        rescheduled with such a compute at phase 1 at the earliest, and the move is
        kept only where no other compute's phase changes (its source readers may
        follow it one phase on). A compute that only casts stays: a chain of
        launches or the step loop carries casts, so a phase 0 of casts alone
        already skips its barrier (moved, they were priced in later phases every
        launch: perf-log step 84). Nothing a moved compute reads is written before
        it runs: an argument updated in place is written by its staged commit,
        after the last reader of the old value."""
        sources: set[int] = set()
        for w in self.works:
            if w.copy_target is None and not only_casts(w.body) \
                    and not any(isinstance(op, tk.MatmulOp) for op in w.body.walk()) \
                    and all(id(p) in sources for v in w.inputs if (p := self._writer_of(v))):
                sources.add(id(w))
        asap = {id(w): w.phase for w in self.works}
        later: frozenset[int] = frozenset()
        for w in self.works:
            if id(w) in sources and asap[id(w)] == 0:
                self._schedule(later | {id(w)})
                if all(r.phase == asap[id(r)] for r in self.works if id(r) not in sources):
                    later |= {id(w)}
        self._schedule(later)

    def _writer_of(self, value: SSAValue) -> Work | None:
        while isinstance(value.owner, tk.ReshapeOp):
            value = value.owner.input
        return self.writer.get(value)

    def _phase_of(self, value: SSAValue) -> int:
        while isinstance(value.owner, tk.ReshapeOp):
            value = value.owner.input
        w = self.writer.get(value)
        return w.phase if w is not None else -1

    def _write_phase(self, buf: SSAValue) -> int:
        root = sched.root_buffer(buf)
        for w in self.works:
            if any(sched.root_buffer(self.buffer_of(v)) is root for v in w.outputs):
                return w.phase
            if w.copy_target is not None and sched.root_buffer(w.copy_target) is root:
                return w.phase
        return -1


def only_casts(body: Region) -> bool:
    """Whether a compute's body does nothing but cast (a weight's compute-dtype copy)."""
    ops = [op for op in body.block.ops if not isinstance(op, tk.YieldOp)]
    return bool(ops) and all(isinstance(op, tk.CastOp) for op in ops)


def lower_function(f: func.FuncOp, inplace: bool, sink_sources: bool = False) -> sched.ProgramOp:
    for op in f.body.block.ops:
        if isinstance(op, tk.AddmmOp | tk.MeanOp):
            raise DiagnosticException(f"tk-to-sched: run tk-decompose first ({op.name} is not in the core set)")
    return Lowering(f, inplace, sink_sources).run()


@dataclass(frozen=True)
class TkToSchedPass(ModulePass):
    """Bufferize and schedule every func.func of tk ops into a sched.program."""

    name = "tk-to-sched"

    inplace: bool = True
    sink_sources: bool = False  # argument-only computes that phase 1 does not read leave phase 0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in list(op.ops):
            if isinstance(f, func.FuncOp):
                program = lower_function(f, self.inplace, self.sink_sources)
                op.body.block.insert_op_before(program, f)
                f.detach()
                f.erase(safe_erase=False)

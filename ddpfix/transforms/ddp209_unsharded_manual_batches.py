"""DDP209: training batches cut from tensors by hand, the same on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.call_params import param_for
from ..analysis.foreign_streams import unknown_streams
from ..analysis.handed_streams import unsharded_handoffs
from ..analysis.random_batches import draws_batch, seeds_random_alike
from ..analysis.stream_windows import stream_windows
from ..examples import clean, fixes, reports
from ..rule import Context, Order, Rule
from ..sample_shards import shard_samples
from ..stream_shards import shard_stream
from ..syntax import assign_targets, assigned_value, code_of, dotted, is_literal, kwarg, positional, single_small, walk

RANDOM_INDICES = {"torch.randint", "numpy.random.randint"}
RANDOM_STARTS = {"random.randint", "random.randrange"}  # one batch start a draw, from Python's `random`
SPLITS = {"split", "chunk", "tensor_split", "array_split"}
SIMPLE = (cst.Name, cst.Attribute, cst.Integer, cst.Call, cst.Subscript)
SPAWNED = "mp.spawn starts the ranks: shard the batches with the worker's rank and world size by hand"


class UnshardedManualBatches(Rule):
    code = "DDP209"
    provides = frozenset({"cut"})
    distributed_only = True
    name = "unsharded-manual-batches"
    message = "training batches cut from tensors by hand: every rank trains on the same batches"
    requires = ("DDP001",)
    docs = """
## What
Training batches taken from tensors without a DataLoader, in one of these shapes:
- a loop over batch offsets or numbers that slices the data: `for i in range(0, n, bs):
  xb = x[i:i + bs]`, `for i in range(n // bs): xb = x[i * bs:(i + 1) * bs]` (also through a
  permutation drawn each epoch: `idx = perm[i:i + bs]`);
- random batch indices drawn each step: `ix = torch.randint(len(data) - block, (batch_size,))`,
  `np.random.randint(0, n, batch_size)`;
- samples taken one by one from a list the script builds (`trigrams = [...]`, then `for context,
  target in trigrams:`): each rank takes every WORLD_SIZE-th sample from its own, as many on every
  rank (`trigrams[RANK::WORLD_SIZE][: len(trigrams) // WORLD_SIZE]`);
- batches a function of its own modules trains over, from an object another returns that is no
  DataLoader (`it = build_iterator(data)`, then `train(model, it)`): reported, no rule splits it;
- batch starts drawn one at a time from Python's `random` after `random.seed(...)` (`start =
  random.randint(0, len(text) - n)`, then `text[start:start + n]`): reported, with what to change.
- batches a training loop of the script draws from an object of its own code that never builds a
  DataLoader: an instance of a batch-iterator class (`train_loader = TextClassDataLoader(path, bs)`,
  handed to `train()`), or what a method of such an object yields (`for X, Y in
  data.get_batches(X, Y, bs, True)`): reported, no rule splits it (an object built from a loader the
  rules know, or from data the caller cut by rank, is not). Where the method takes its samples from
  tensors the loop's function is handed, and reads them only as `len(X)`, `X.size(0)` or
  `X.shape[0]` and as `X[index]` (a permutation's slice, a range), each rank takes its own samples
  of each of them right before the loop, as many on every rank (`X = X[RANK::WORLD_SIZE][: len(X) //
  WORLD_SIZE]`), so whatever order the method draws, the ranks' batches are disjoint and as many;
- windows a helper cuts from one stream in a `while` loop that advances by their length (`while i <
  train_data.size(0) - 1: seq_len = max(5, int(np.random.normal(bptt, 5))); data, targets =
  get_batch(train_data, i, seq_len=seq_len); ...; i += seq_len`, a language model's bptt windows of a
  random length; the helper of the script or of its own modules, slicing its first parameter at its
  second): no offsets to stride, so each rank takes its own stretch of the stream where it is bound,
  all as long (`stretch = len(train_data) // WORLD_SIZE`, then `train_data = train_data[RANK * stretch
  : (RANK + 1) * stretch]`), and the ranks take the same number of windows while their lengths are
  the same on every rank. Lengths drawn at random with nothing seeded, or a stream bound more than
  once, are reported without a fix.

## Why
DDP does not shard input. Every process cuts the same batches (the same offsets; the same random
draws, since every rank seeds its generator alike), so N processes do N times the work on identical
data and the gradient average gains nothing.

## Example
```python
for epoch in range(epochs):
    perm = torch.randperm(n)
    for i in range(0, n, bs):
        idx = perm[i:i + bs]
```
becomes
```python
for epoch in range(epochs):
    perm = torch.randperm(n)
    num_batches = len(range(0, n, bs)) // WORLD_SIZE  # the same on every rank: DDP steps together
    for i in range(RANK * bs, n, WORLD_SIZE * bs)[:num_batches]:
        idx = perm[i:i + bs]
```
Each rank takes every WORLD_SIZE-th batch, starting at its own. Every rank must run the same number
of steps (a rank with one batch more waits forever in its gradient all-reduce), so each runs
`len(batches) // WORLD_SIZE` of them: up to WORLD_SIZE - 1 batches at the end of an epoch are left
out when distributed. `for i in range(num_batches):` becomes
`for i in range(RANK, num_batches, WORLD_SIZE)[: num_batches // WORLD_SIZE]`. Random draws become
one draw for all ranks, of which each takes its own part:
```python
ix = torch.randint(len(data) - block, (batch_size * WORLD_SIZE,))[RANK * batch_size:(RANK + 1) * batch_size]
```
Every rank draws the same numbers, so the random generators stay in step across ranks (a
permutation or split drawn later is still the same everywhere).

A plain run (RANK 0, WORLD_SIZE 1) takes every batch in the same order, and draws the same random
numbers as before.

## Fix safety
Safe for the shapes above. Batches taken with `x.split(bs)`, `torch.chunk`, or a `range` with another
start, and random draws whose size is not a literal tuple, are reported with what to do by hand.
Loops that already depend on the rank are left alone. A stream cut into stretches loses up to
WORLD_SIZE - 1 rows at its end when distributed; a plain run keeps the whole stream. The samples a
method takes are cut only where nothing else could miss the cut or make it twice: every tensor the
method samples is one of the function's parameters, handed to the method as a plain name, not bound
again before the loop, and read nowhere else in the function (where the loop's target rebinds it,
nowhere before the loop), else a number taken over the whole data would be taken over this rank's
part, and the loop runs in no other loop of its function (else each pass would cut again); a method that reads such a tensor
any other way (`X[:, 0]`, `X.cuda()`, `helper(X)`), or takes samples of other data with the same index
(`self.labels[excerpt]` beside `X[excerpt]`), is reported without a fix, since a cut of some of its
inputs only would pair samples wrongly. Up to WORLD_SIZE - 1 samples are left out when
distributed; a plain run takes every sample, as before.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        spawned = bool(facts.launch.spawn_calls)  # ranks come from mp.spawn, not from torchrun's environment
        loops = [
            loop for loop in facts.index.loops if isinstance(loop, cst.For) and facts.training.trains_in(loop.body)
        ]
        for loop in loops:
            if facts.ranks.depends_on_rank(loop.iter) or not _innermost(facts, loop, loops):
                continue
            var, rng = _batch_range(loop)
            if rng is not None and var is not None and _slices_with(facts, loop.body, var):
                if _sharded_before(facts, loop, var):
                    continue  # cut from data the script already shards by rank
                if spawned:
                    ctx.report(rng, f"{self.message}; {SPAWNED}", fix="none")
                else:
                    self._range(ctx, loop, rng)
                continue
            samples = _sample_list(facts, loop)
            if samples is not None:
                if spawned:
                    ctx.report(loop.iter, f"{self.message}; {SPAWNED}", fix="none")
                elif _cuts(
                    ctx,
                    loop,
                    loop.iter,
                    {f"len({samples})"},
                    f"training samples taken one by one from the list {samples}: every rank trains on all of them",
                ):
                    rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
                    # every WORLD_SIZE-th sample from this rank's own, the same count on every rank
                    new = f"{samples}[{rank}::{world}][: len({samples}) // {world}]"
                    ctx.plan.replace(loop.iter, lambda _n, t=new: cst.parse_expression(t))
                continue
            split = _split_iter(loop)
            if split is not None and _uses_target(loop):
                ctx.report(
                    split,
                    f"{self.message}; give each rank its share of {code_of(split)} by hand "
                    "([RANK::WORLD_SIZE], cut to the same length on every rank)",
                    fix="none",
                )
        for call in facts.names.calls_matching(lambda q: q in RANDOM_INDICES):
            if draws_batch(facts, call, loops) and not facts.ranks.depends_on_rank(call):
                if spawned:
                    ctx.report(call, f"{self.message}; {SPAWNED}", fix="none")
                else:
                    self._draw(ctx, call)
        for found in stream_windows(facts):
            shard_stream(ctx, found, SPAWNED if spawned else None)
        for arg, message in unsharded_handoffs(facts):
            ctx.report(arg, message, fix="none")
        for stream in unknown_streams(facts):
            shard_samples(ctx, stream, SPAWNED if spawned else None)
        if seeds_random_alike(facts):
            for call in facts.names.calls_matching(lambda q: q in RANDOM_STARTS):
                if draws_batch(facts, call, loops) and not facts.ranks.depends_on_rank(call):
                    ctx.report(
                        call,
                        f"training batches cut at {code_of(call)}, drawn from `random` seeded alike on every rank: "
                        "every rank trains on the same batches; draw each rank's starts from its own stream "
                        "(random.Random(seed + RANK)) or cut the data by rank",
                        fix="none",
                    )

    # ------------------------------------------------------------------ for i in range(0, n, bs)
    def _range(self, ctx: Context, loop: cst.For, rng: cst.Call) -> None:
        args = [a for a in rng.args if not a.keyword]
        if len(args) == 3 and is_literal(args[0].value, 0) and len(args) == len(rng.args):
            if not _cuts(ctx, loop, rng, {code_of(args[1].value)}):
                return
            n, bs = code_of(args[1].value), _paren(args[2].value)
            rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
            count = ctx.plan.fresh("num_batches")
            stmts = ctx.plan.statements(
                "{c} = len(range(0, {n}, {b})) // {w}  # the same on every rank: DDP steps together",
                c=count,
                n=n,
                b=code_of(args[2].value),
                w=world,
            )
            ctx.plan.insert_before(loop, stmts, order=Order.SAMPLER)
            new = f"range({rank} * {bs}, {n}, {world} * {bs})[:{count}]"
            ctx.plan.replace(rng, lambda _n, t=new: cst.parse_expression(t))
            return
        if len(args) == 1 and len(rng.args) == 1:
            if not _cuts(ctx, loop, rng, {code_of(args[0].value)}):
                return
            total = code_of(args[0].value)
            rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
            new = f"range({rank}, {total}, {world})[: {_paren(args[0].value)} // {world}]"
            ctx.plan.replace(rng, lambda _n, t=new: cst.parse_expression(t))
            return
        ctx.report(
            rng,
            f"{self.message}; this range does not start at 0: give each rank every WORLD_SIZE-th batch "
            "by hand, the same number on every rank",
            fix="none",
        )

    # ------------------------------------------------------------------ ix = torch.randint(high, (bs,))
    def _draw(self, ctx: Context, call: cst.Call) -> None:
        facts = ctx.facts
        qual = facts.names.call_qual(call)
        size = kwarg(call, "size") or (positional(call, 1) if qual == "torch.randint" else positional(call, 2))
        if qual == "torch.randint" and len([a for a in call.args if not a.keyword]) == 3:
            size = positional(call, 2)  # torch.randint(low, high, size)
        stmt = facts.index.site(call).stmt
        small = single_small(stmt)
        if size is None or not isinstance(small, cst.Assign) or assigned_value(stmt) is not call:
            ctx.report(call, f"{self.message}; draw WORLD_SIZE times as many and keep this rank's part", fix="none")
            return
        value = size.value
        if isinstance(value, cst.Tuple) and value.elements:
            first = value.elements[0].value
        elif qual == "numpy.random.randint" and not isinstance(value, (cst.Tuple, cst.List)):
            first = value
        else:
            ctx.report(call, f"{self.message}; draw WORLD_SIZE times as many and keep this rank's part", fix="none")
            return
        if not ctx.report(call):
            return
        rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
        b = _paren(first)
        more = cst.parse_expression(f"{b} * {world}")

        def widen(node: cst.Call) -> cst.Call:
            args = list(node.args)
            for i, a in enumerate(args):
                if a.deep_equals(size):
                    if isinstance(a.value, cst.Tuple):
                        elements = list(a.value.elements)
                        elements[0] = elements[0].with_changes(value=more)
                        args[i] = a.with_changes(value=a.value.with_changes(elements=elements))
                    else:
                        args[i] = a.with_changes(value=more)
            return node.with_changes(args=args)

        sliced = f"[{rank} * {b}:({rank} + 1) * {b}]"
        ctx.plan.replace(call, lambda n: cst.parse_expression(code_of(widen(n)) + sliced))
        comment = "  # one draw for all ranks; this rank's part"
        if isinstance(stmt, cst.SimpleStatementLine) and stmt.trailing_whitespace.comment is None:
            ctx.plan.replace(
                stmt,
                lambda s: s.with_changes(
                    trailing_whitespace=cst.TrailingWhitespace(
                        whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment.strip())
                    )
                ),
            )


def _paren(expr: cst.BaseExpression) -> str:
    text = code_of(expr)
    return text if isinstance(expr, SIMPLE) else f"({text})"


def _sharded_before(facts, loop: cst.For, var: str) -> bool:
    """Are the tensors the loop cuts (or the range it walks) already a per-rank shard
    (`shard_x = data[rank::world_size]`)?"""
    names = {n.value for n in walk(loop.iter) if isinstance(n, cst.Name)}
    for node in walk(loop.body):
        if isinstance(node, cst.Subscript) and any(
            isinstance(e.slice, cst.Slice) and any(isinstance(n, cst.Name) and n.value == var for n in walk(e.slice))
            for e in node.slice
        ):
            names |= {n.value for n in walk(node.value) if isinstance(n, cst.Name)}
    scope = facts.index.scope_of(loop)
    for name in names:
        for site in facts.names.assignments(scope, name):
            value = assigned_value(site.stmt)
            if value is not None and facts.ranks.depends_on_rank(value):
                return True
    return False


def _innermost(facts, loop: cst.For, loops: list[cst.For]) -> bool:
    """No other training loop inside it: the batch loop, not the epoch loop around it."""
    return not any(other is not loop and facts.index.contains(loop, other) for other in loops)


def _batch_range(loop: cst.For) -> tuple[str | None, cst.Call | None]:
    """(the loop variable, the range call) for `for i in range(...)` and `for step, i in enumerate(range(...))`."""
    it, target = loop.iter, loop.target
    if isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and it.args:
        inner = it.args[0].value
        if isinstance(target, cst.Tuple) and len(target.elements) == 2:
            target = target.elements[1].value
        it = inner
    if isinstance(it, cst.Call) and dotted(it.func) == "range" and isinstance(target, cst.Name):
        return target.value, it
    return None, None


def _slices_with(facts, body: cst.CSTNode, var: str, depth: int = 0) -> bool:
    """Does `body` cut a slice whose bounds use `var` (`x[i:i + bs]`, `x[i * bs:(i + 1) * bs]`), itself
    or in a function of this file it hands `var` to (`data, target = get_batch(source, i)`)?"""
    names = _derived(body, var)
    for node in walk(body):
        if isinstance(node, cst.Slice) and node.lower is not None and node.upper is not None:
            if any(isinstance(n, cst.Name) and n.value in names for n in walk(node.lower)) and any(
                isinstance(n, cst.Name) and n.value in names for n in walk(node.upper)
            ):
                return True
        if isinstance(node, cst.Call) and depth < 2:
            param = _param_given(facts, node, var)
            if param is not None and _slices_with(facts, param[0].body, param[1], depth + 1):
                return True
    return False


def _derived(body: cst.CSTNode, var: str) -> set[str]:
    """`var` and the names `body` computes from it (`start, end = i * bs, (i + 1) * bs`)."""
    names = {var}
    for node in walk(body):
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0].target, node.value
        if (
            isinstance(target, cst.Tuple)
            and isinstance(value, cst.Tuple)
            and len(target.elements) == len(value.elements)
        ):
            pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
        else:
            pairs = [(target, value)]
        for t, v in pairs:
            if isinstance(t, cst.Name) and any(isinstance(n, cst.Name) and n.value in names for n in walk(v)):
                names.add(t.value)
    return names


def _param_given(facts, call: cst.Call, var: str) -> tuple[cst.FunctionDef, str] | None:
    """(the function of this file `call` runs, the name of its parameter that receives `var`)."""
    callee = facts.index.callee_of(call)
    arg = next((a for a in call.args if not a.star and dotted(a.value) == var), None)
    param = param_for(callee, call, arg) if callee is not None and arg is not None else None
    return None if param is None else (callee, param)


def _sample_list(facts, loop: cst.For) -> str | None:
    """The name of a list of training samples the loop walks (`for context, target in trigrams:`, the
    list built by a comprehension or a literal in the loop's scope or at module level), not a loader."""
    if not isinstance(loop.iter, cst.Name) or facts.ranks.depends_on_rank(loop.iter):
        return None
    name = loop.iter.value
    scopes = {facts.index.scope_of(loop), facts.module}
    bound = [
        a
        for a in facts.index.assigns
        if facts.index.scope_of(a) in scopes and name in assign_targets(facts.index.site(a).stmt)
    ]
    if len(bound) != 1 or not isinstance(bound[0].value, (cst.ListComp, cst.List)):
        return None
    return name


def _split_iter(loop: cst.For) -> cst.Call | None:
    it = loop.iter
    if isinstance(it, cst.Call) and dotted(it.func) == "zip" and it.args:
        it = it.args[0].value
    if isinstance(it, cst.Call) and (dotted(it.func) or "").rsplit(".", 1)[-1] in SPLITS:
        return it
    return None


def _uses_target(loop: cst.For) -> bool:
    return isinstance(loop.target, (cst.Name, cst.Tuple))


def _cuts(ctx: Context, loop: cst.For, node: cst.CSTNode, counts: set[str], message: str | None = None) -> bool:
    """Report `node`; the loop is cut by rank when the fix is made (True), and also noted as cut
    (with the whole run's counts it spans) where a check reports what a fix run would cut:
    DDP409 reads it to reduce the totals the loop sums."""
    before = len(ctx.diagnostics)
    made = ctx.report(node, message)
    if len(ctx.diagnostics) > before and ctx.offers(ctx.diagnostics[-1]):
        ctx.plan.cut[loop] = counts
    return made


EXAMPLES = (
    fixes(
        """
        import os

        import numpy as np
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        dist.init_process_group("gloo")


        def get_batch(source, i, seq_len):
            return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len]


        np.random.seed(0)
        train_data = torch.randn(400, 4, 8)
        model = DDP(nn.Linear(8, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        i = 0
        while i < train_data.size(0) - 1:
            seq_len = max(2, int(np.random.normal(6, 2)))
            data, targets = get_batch(train_data, i, seq_len)
            loss = nn.functional.mse_loss(model(data), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            i += seq_len
        """,
        """
        import os

        import numpy as np
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1
        dist.init_process_group("gloo")


        def get_batch(source, i, seq_len):
            return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len]


        np.random.seed(0)
        train_data = torch.randn(400, 4, 8)
        if DISTRIBUTED:  # each rank its own stretch of the stream, all as long: the ranks take the same steps
            stretch = len(train_data) // WORLD_SIZE
            train_data = train_data[RANK * stretch : (RANK + 1) * stretch]
        model = DDP(nn.Linear(8, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        i = 0
        while i < train_data.size(0) - 1:
            seq_len = max(2, int(np.random.normal(6, 2)))
            data, targets = get_batch(train_data, i, seq_len)
            loss = nn.functional.mse_loss(model(data), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            i += seq_len
        """,
        note=(
            "Windows of a random length cut from one stream: each rank now walks its own stretch, all as long, "
            "and draws the same lengths (seeded alike), so the ranks take the same steps:"
        ),
    ),
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        dist.init_process_group("gloo")


        class Windows:
            def get_batches(self, inputs, targets, batch_size):
                index = torch.randperm(len(inputs))
                for start in range(0, len(inputs), batch_size):
                    excerpt = index[start : start + batch_size]
                    yield inputs[excerpt], targets[excerpt]


        def train(data, X, Y, model, opt, batch_size):
            for xb, yb in data.get_batches(X, Y, batch_size):
                loss = nn.functional.mse_loss(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()


        torch.manual_seed(0)
        X, Y = torch.randn(64, 8), torch.randn(64, 1)
        model = DDP(nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train(Windows(), X, Y, model, opt, 8)
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1
        dist.init_process_group("gloo")


        class Windows:
            def get_batches(self, inputs, targets, batch_size):
                index = torch.randperm(len(inputs))
                for start in range(0, len(inputs), batch_size):
                    excerpt = index[start : start + batch_size]
                    yield inputs[excerpt], targets[excerpt]


        def train(data, X, Y, model, opt, batch_size):
            if DISTRIBUTED:  # each rank its own samples, as many on every rank: the ranks take the same steps
                X = X[RANK::WORLD_SIZE][: len(X) // WORLD_SIZE]
                Y = Y[RANK::WORLD_SIZE][: len(Y) // WORLD_SIZE]
            for xb, yb in data.get_batches(X, Y, batch_size):
                loss = nn.functional.mse_loss(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()


        torch.manual_seed(0)
        X, Y = torch.randn(64, 8), torch.randn(64, 1)
        model = DDP(nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train(Windows(), X, Y, model, opt, 8)
        """,
        note=(
            "Batches a method of the script's own class takes from the tensors it is handed: each rank cuts "
            "its own samples of them before the loop, as many on every rank:"
        ),
    ),
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        dist.init_process_group("gloo")
        data, target = torch.randn(1000, 4), torch.randn(1000, 1)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        bs = 50
        for i in range(0, len(data), bs):
            loss = nn.functional.mse_loss(model(data[i : i + bs]), target[i : i + bs])
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        dist.init_process_group("gloo")
        data, target = torch.randn(1000, 4), torch.randn(1000, 1)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        bs = 50
        num_batches = len(range(0, len(data), bs)) // WORLD_SIZE  # the same on every rank: DDP steps together
        for i in range(RANK * bs, len(data), WORLD_SIZE * bs)[:num_batches]:
            loss = nn.functional.mse_loss(model(data[i : i + bs]), target[i : i + bs])
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note=(
            "Batches sliced by hand: every rank trained on every batch; each rank now takes every WORLD_SIZE-th "
            "batch, and all take the same number:"
        ),
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        dist.init_process_group("gloo")
        data, target = torch.randn(1000, 4), torch.randn(1000, 1)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        bs = 50
        for i in range(RANK * bs, 1000 - WORLD_SIZE * bs + 1, WORLD_SIZE * bs):
            loss = nn.functional.mse_loss(model(data[i : i + bs]), target[i : i + bs])
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Batches the script already shards by rank:",
    ),
    reports(
        """
        import random

        import torch
        import torch.nn as nn

        random.seed(0)
        text = [i % 7 for i in range(500)]


        def random_chunk(n):
            start = random.randint(0, len(text) - n - 1)
            chunk = torch.tensor(text[start : start + n + 1])
            return chunk[:-1].float(), chunk[1:].float()


        def main():
            model = nn.Linear(16, 16)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x, y = random_chunk(16)
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="Chunks cut at starts drawn from `random`, seeded alike on every rank: reported, with what to change:",
    ),
)

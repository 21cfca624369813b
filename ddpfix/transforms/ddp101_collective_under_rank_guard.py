"""DDP101: a collective that only some ranks reach."""

from __future__ import annotations

import libcst as cst

from ..analysis.ranks import Ranks
from ..examples import clean, fixes, reports
from ..rule import UNSAFE, Context, Rule
from ..syntax import expr_call, names_in, walk


class CollectiveUnderRankGuard(Rule):
    code = "DDP101"
    name = "collective-under-rank-guard"
    message = "collective reached by some ranks only: the others never join it and every rank hangs"
    provides = frozenset({"hoisted"})
    fix = UNSAFE
    docs = """
## What
A `dist.barrier()`, `all_reduce`, `broadcast`, ... (or a helper of the script, or of one of its own
modules, that issues one) inside a branch that depends on the rank, with no matching call on the
other ranks. Rank tests are read by the one rank detector: `rank == 0`, `not rank`,
`args.local_rank in [-1, 0]`, `is_main_process()`, `master_process`, names bound from them; a flag
every rank shares (`ddp = int(os.environ.get("RANK", -1)) != -1`) is not one.

## Why
A collective completes only when every rank calls it. Rank 0 waits in the barrier until the timeout:
`RuntimeError: [...] Timed out waiting 1800000ms for recv operation to complete` (gloo) or the NCCL
watchdog's `Watchdog caught collective operation timeout: WorkNCCL(... OpType=ALLREDUCE ...)`; with
`TORCH_DISTRIBUTED_DEBUG=DETAIL`, `Detected mismatch between collectives on ranks`.

Collectives are counted per rank path, so the "main process first" idiom is not flagged:
```python
if rank != 0:
    dist.barrier()      # others wait while rank 0 prepares the data
prepare_data()
if rank == 0:
    dist.barrier()      # rank 0 releases them
```

## Example
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
    dist.barrier()
    print("saved")
```
becomes (with `--unsafe-fixes`) a block split around the collective, which every rank now reaches:
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
dist.barrier()
if rank == 0:
    print("saved")
```
A collective first or last in the block leaves one `if`; `if DISTRIBUTED: dist.barrier()` leaves the
block whole.

## Fix safety
Unsafe: the statements after the collective now run after the other ranks have passed it too. The
block is split only when the collective is a statement of the branch itself (or of an `if` every rank
decides alike that holds nothing else) with no arguments (a tensor filled on rank 0 only would
change meaning), the branch has no `else`/`elif`, and nothing in it assigns a name its condition
reads. Otherwise the diagnostic says what to do.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        by_scope: dict[int, list[tuple[cst.If, cst.Call, str, tuple]]] = {}
        for node in ranks.rank_ifs():
            take0, take_n = ranks.takes(node.test)
            branches = [(node.body, (take0, take_n))]
            if isinstance(node.orelse, cst.Else):
                branches.append((node.orelse.body, (_neg(take0), _neg(take_n))))
            for body, taken in branches:
                for call, op in ranks.collectives_in(body):
                    if _inner_rank_if(facts, ranks, call, node):
                        continue  # counted at the innermost rank-dependent branch
                    by_scope.setdefault(id(facts.index.scope_of(node)), []).append((node, call, op, taken))
        for entries in by_scope.values():
            for node, call, op in _unpaired(entries):
                self._report(ctx, node, call, op)

    def _report(self, ctx: Context, node: cst.If, call: cst.Call, op: str) -> None:
        facts = ctx.facts
        leaving = _leaving_statement(facts, node, call)
        splittable = (
            leaving is not None
            and node.orelse is None
            and not isinstance(facts.index.parent.get(node), cst.If)  # an `elif`
            and any(s is not leaving for s in node.body.body)
            and not (names_in(node.test) & _assigned_in(node.body))
        )
        message = f"{op} is reached by some ranks only: the others never join it and every rank hangs"
        if not splittable:
            ctx.report(call, message + "; call it on every rank (outside the rank condition)", fix="none")
            return
        ctx.plan.hoisted.append(call)
        if ctx.report(call, message):
            ctx.plan.split(node, leaving)


def _leaving_statement(facts, node: cst.If, call: cst.Call) -> cst.CSTNode | None:
    """The statement of the guarded block that can leave it: the collective's own statement
    (`dist.barrier()`), or an `if` every rank decides alike that only issues collectives
    (`if DISTRIBUTED: dist.barrier()`). None when the collective takes data or sits deeper."""
    stmt = facts.index.site(call).stmt
    if facts.index.parent.get(stmt) is node.body:
        return stmt if _bare_collective(facts, stmt) else None
    owner = facts.index.parent.get(facts.index.parent.get(stmt))
    if (
        isinstance(owner, cst.If)
        and facts.index.parent.get(owner) is node.body
        and owner.orelse is None
        and not facts.ranks.is_rank_test(owner.test)
        and isinstance(owner.body, cst.IndentedBlock)
        and all(_bare_collective(facts, s) for s in owner.body.body)
    ):
        return owner
    return None


def _bare_collective(facts, stmt: cst.CSTNode) -> bool:
    """`dist.barrier()` on a line of its own: a collective with no data of this branch."""
    call = expr_call(stmt)
    return call is not None and not call.args and facts.ranks.collective_op(call) is not None


def _assigned_in(block: cst.CSTNode) -> set[str]:
    """Names a block assigns: a test that reads one may change between the pieces of a split."""
    out: set[str] = set()
    for n in walk(block):
        if isinstance(n, cst.AssignTarget):
            out |= names_in(n.target)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out |= names_in(n.target)
    return out


def _unpaired(entries):
    """Collectives no other rank path matches. A branch only rank 0 takes pairs with the next (or
    previous) one only the other ranks take, for the same op: the "main process first" idiom."""
    zero_only: dict[str, list] = {}
    other_only: dict[str, list] = {}
    for node, call, op, (t0, tn) in entries:
        if t0 is not False and tn is False:
            zero_only.setdefault(op, []).append((node, call, op))
        elif tn is not False and t0 is False:
            other_only.setdefault(op, []).append((node, call, op))
    out = []
    for op in set(zero_only) | set(other_only):
        a, b = zero_only.get(op, []), other_only.get(op, [])
        n = min(len(a), len(b))
        out += a[n:] + b[n:]
    return out


def _neg(v):
    return None if v is None else not v


def _inner_rank_if(facts, ranks: Ranks, call: cst.CSTNode, outer: cst.If) -> bool:
    for anc in facts.index.ancestors(call):
        if anc is outer:
            return False
        if isinstance(anc, cst.If) and ranks.is_rank_test(anc.test):
            return True
    return False


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
            dist.barrier()
        dist.destroy_process_group()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        dist.barrier()
        dist.destroy_process_group()
        """,
        note="The barrier moves out of the rank-0 branch, so every rank reaches it:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                dist.all_reduce(loss)
                print(f"step {step}: mean loss {loss.item() / dist.get_world_size():.4f}")
        dist.destroy_process_group()
        """,
        message=(
            "all_reduce is reached by some ranks only: the others never join it and every rank hangs; call it "
            "on every rank (outside the rank condition)"
        ),
        note="Reported without a fix: the collective's result is used inside the branch, so it cannot simply move out:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        if dist.get_rank() != 0:
            dist.barrier()
        data = torch.randn(64, 4)
        if dist.get_rank() == 0:
            dist.barrier()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data.split(8):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note='"Rank 0 first": the other ranks wait in one barrier, rank 0 releases them from the other:',
    ),
)

"""The model rules on the shapes real scripts have: attributes only the model has (DDP308), names bound
again after the wrap, helpers handed the wrapper (DDP103/402/403/308), models updated without an
optimizer object or built by helpers (DDP301), DataParallel under conditions (DDP302)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddpfix import check_source, fix_source


def found(src: str, code: str, path: str = "<string>") -> list:
    return [d for d in check_source(src, path=path) if d.code == code]


def fixed(src: str, *codes: str, path: str = "<string>", **kw) -> str:
    return fix_source(src, select=list(codes) or None, path=path, **kw).code


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


TRAIN = """
import torch
import torch.nn as nn
{imports}

{defs}

def main():
    {build}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
{after}


if __name__ == "__main__":
    main()
"""


def train(build="model = nn.Linear(2, 2)", after="", defs="", imports="") -> str:
    return TRAIN.lstrip("\n").format(
        build=build, after=textwrap.indent(src(after), "    "), defs=src(defs), imports=imports
    )


# --------------------------------------------------------------------------- DDP308: any attribute
def test_ddp308_library_model_attributes_go_to_the_plain_module():
    after = """
    out = model.generate(torch.zeros(1, 2))
    model.save_pretrained("out")
    print(model.config, model.in_features)
    model.train()
    print(model.training, model.module if False else 0)
    """
    out = fixed(train(after=after), "DDP301", "DDP308")
    assert '    out = raw_model.generate(torch.zeros(1, 2))\n    raw_model.save_pretrained("out")\n' in out
    assert "print(raw_model.config, raw_model.in_features)" in out
    assert "    model.train()\n" in out and "print(model.training, model.module" in out


def test_ddp308_private_names_only_where_the_class_defines_them():
    defs = """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self._steps = 0

        def forward(self, x):
            return self.fc(x)
    """
    out = fixed(
        train(build="model = Net()", defs=defs, after="print(model._steps, model._foo, model.__class__)"),
        "DDP301",
        "DDP308",
    )
    assert "print(raw_model._steps, model._foo, model.__class__)" in out


def test_ddp308_local_module_class(tmp_path: Path):
    (tmp_path / "nets.py").write_text(
        src(
            """
            import torch.nn as nn

            class RNN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cell = nn.Linear(2, 2)
                    self._h = None

                def init_hidden(self, n):
                    return None

                def forward(self, x):
                    return self.cell(x)
            """
        )
    )
    script = train(build="model = RNN()", imports="from nets import RNN", after="print(model.init_hidden(2), model._h)")
    path = str(tmp_path / "train.py")
    out = fixed(script, "DDP301", "DDP308", path=path)
    assert "print(raw_model.init_hidden(2), raw_model._h)" in out


def test_ddp308_function_reading_the_module_level_model():
    script = src(
        """
        import torch
        import torch.nn as nn

        model = nn.GRU(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        def report():
            return model.hidden_size


        def shadowed(model):
            return model.hidden_size


        print(report())
        for step in range(2):
            model(torch.randn(3, 1, 2))[0].sum().backward()
            opt.step()
        print(report(), shadowed(nn.GRU(2, 3)))
        """
    )
    out = fixed(script, "DDP301", "DDP308")
    assert "    return raw_model.hidden_size\n" in out
    assert "def shadowed(model):\n    return model.hidden_size\n" in out
    # report() also runs before the wrap: `model` is then the plain module, and raw_model does not exist yet
    early = script.replace("print(report())\nfor", "for")
    assert "    return raw_model.hidden_size\n" in fixed(early, "DDP301", "DDP308")


def test_ddp308_forward_of_a_submodule_in_the_training_step_is_reported_only():
    script = src(
        """
        import torch
        import torch.nn as nn

        model = nn.GRU(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            out = model.encode(torch.randn(3, 1, 2))
            out.sum().backward()
            opt.step()
        """
    )
    [d] = found(script, "DDP308")
    assert d.fix == "none" and "forward" in d.message


def test_ddp308_no_reachable_plain_module_is_reported_only():
    script = src(
        """
        import torch
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Trainer:
            def __init__(self, model, distributed):
                self.model = model
                raw_model = self.model
                if distributed:
                    self.model = DDP(self.model)
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def fit(self):
                self.model(torch.randn(2, 2)).sum().backward()
                self.opt.step()
                return self.model.describe

            def summary(self):
                return self.model.describe


        if __name__ == "__main__":
            Trainer(nn.Linear(2, 2), False).fit()
        """
    )
    diags = found(script, "DDP308")
    assert [d.line for d in diags] == [17, 20] and all(d.fix == "none" for d in diags)
    assert "raw_model." not in fixed(script, "DDP308")


# --------------------------------------------------------------------------- the binding that is live
def test_a_name_bound_again_is_not_the_wrapper_any_more():
    after = """
    torch.save(model.state_dict(), "m.pt")
    model = nn.Linear(2, 2)
    model.load_state_dict(torch.load("m.pt"))
    print(model.weight.shape)
    torch.save(model.state_dict(), "again.pt")
    """
    out = fixed(train(after=after), "DDP301", "DDP308", "DDP402", "DDP403")
    assert 'torch.save(raw_model.state_dict(), "m.pt")' in out
    assert '    model.load_state_dict(torch.load("m.pt"))\n    print(model.weight.shape)\n' in out
    assert 'torch.save(model.state_dict(), "again.pt")' in out


def test_moving_the_wrapper_keeps_it_the_wrapper():
    out = fixed(train(after="model = model.to('cpu')\nprint(model.weight)"), "DDP301", "DDP308")
    assert "print(raw_model.weight)" in out


def test_a_model_loaded_by_a_helper_is_plain():
    defs = """
    def load_model(path):
        m = nn.Linear(2, 2)
        m.load_state_dict(torch.load(path))
        return m
    """
    after = """
    model = load_model("m.pt")
    model.load_state_dict(torch.load("m.pt"))
    print(model.weight)
    """
    assert [d for d in check_source(train(defs=defs, after=after)) if d.code in ("DDP308", "DDP403")] == []


# --------------------------------------------------------------------------- helpers handed the wrapper
HELPERS = """
def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(2, 2)).sum().item()


def save_checkpoint(model, path):
    torch.save(model.module.state_dict() if hasattr(model, "module") else model.state_dict(), path)


def save_plain(model, path):
    torch.save(model.state_dict(), path)


def unwrap_model(m):
    return getattr(m, "module", m)


def load_weights(model, path):
    model.load_state_dict(torch.load(path))


def train_more(model, opt):
    model(torch.randn(2, 2)).sum().backward()
    model.load_state_dict(model.state_dict())
    opt.step()
"""


def test_rank0_helpers_get_the_plain_module_once():
    after = """
    rank = int(os.environ.get("RANK", 0))
    if rank == 0:
        print(evaluate(model))
        save_checkpoint(model, "a.pt")
        save_plain(model, "b.pt")
        save_plain(unwrap_model(model), "c.pt")
    """
    out = fixed(train(defs=HELPERS, after=after, imports="import os"), "DDP301", "DDP103", "DDP402")
    assert "print(evaluate(raw_model))" in out
    assert 'save_checkpoint(model, "a.pt")' in out  # it reaches .module itself
    assert 'save_plain(raw_model, "b.pt")' in out
    assert 'save_plain(unwrap_model(model), "c.pt")' in out
    assert "module.module" not in out


def test_helpers_on_every_rank():
    after = """
    load_weights(model, "b.pt")
    print(evaluate(model))
    train_more(model, opt)
    """
    script = train(defs=HELPERS, after=after)
    out = fixed(script, "DDP301", "DDP103", "DDP402", "DDP403")
    assert 'load_weights(raw_model, "b.pt")' in out
    assert "print(evaluate(model))" in out  # a forward on every rank goes through the wrapper
    assert "train_more(model, opt)" in out
    [d] = [d for d in check_source(script) if d.code == "DDP403" and d.fix == "none"]
    assert "trains" in d.message


def test_helpers_handed_the_plain_module_are_left_alone():
    script = (
        src(
            """
        import os
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        """
        )
        + src(HELPERS)
        + src(
            """

        def main():
            dist.init_process_group("gloo")
            model = nn.Linear(2, 2)
            model_without_ddp = model
            model = DDP(model)
            raw_model = model.module
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2)).sum().backward()
            opt.step()
            if dist.get_rank() == 0:
                save_plain(model.module, "a.pt")
                save_plain(raw_model, "b.pt")
                save_plain(model_without_ddp, "c.pt")
                save_plain(unwrap_model(model), "d.pt")
                print(evaluate(model_without_ddp))
            load_weights(model_without_ddp, "c.pt")
        """
        )
    )
    for code in ("DDP103", "DDP402", "DDP403", "DDP308"):
        assert found(script, code) == [], code


def test_helper_of_a_local_module_that_loads_weights(tmp_path: Path):
    (tmp_path / "ckpt.py").write_text(
        src(
            """
            import torch

            def _read(path):
                return torch.load(path, map_location="cpu")

            def load_checkpoint(model, path):
                model.load_state_dict(_read(path)["model"])

            def restore(model, path):
                load_checkpoint(model, path)
            """
        )
    )
    script = train(imports="from ckpt import restore", after='restore(model, "c.pt")')
    out = fixed(script, "DDP301", "DDP403", path=str(tmp_path / "train.py"))
    assert 'restore(raw_model, "c.pt")' in out
    # unreadable: nothing is claimed about it
    assert found(script, "DDP403", path=str(tmp_path / "elsewhere" / "train.py")) == []


def test_a_helper_call_before_the_wrap_loads_before_it():
    defs = """
    def load_weights(model, path):
        model.load_state_dict(torch.load(path))
    """
    out = fixed(train(build='model = nn.Linear(2, 2)\n    load_weights(model, "init.pt")', defs=defs), "DDP301")
    assert out.index('load_weights(model, "init.pt")') < out.index("model = DDP(model")


def test_names_of_another_method_are_not_used():
    script = src(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Trainer:
            def __init__(self, model):
                model = model.to("cpu")
                self.model = DDP(model)
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def save(self, path):
                torch.save(self.model.state_dict(), path)

            def fit(self):
                self.model(torch.randn(4, 2)).sum().backward()
                self.opt.step()
                if dist.get_rank() == 0:
                    self.save("t.pt")
                    print(self.model(torch.randn(1, 2)))
                self.model.load_state_dict(torch.load("t.pt"))


        if __name__ == "__main__":
            Trainer(nn.Linear(2, 2)).fit()
        """
    )
    out = fixed(script, "DDP103", "DDP402", "DDP403")
    assert "torch.save(self.model.module.state_dict(), path)" in out
    assert "print(self.model.module(torch.randn(1, 2)))" in out
    assert 'self.model.module.load_state_dict(torch.load("t.pt"))' in out


# --------------------------------------------------------------------------- models without an optimizer
def test_manual_updates_mark_the_model_trained():
    for update in (
        "for p in model.parameters():\n            p -= 0.1 * p.grad",
        "for name, p in model.named_parameters():\n            p.data.add_(p.grad, alpha=-0.1)",
        "for param in model.parameters():\n            param.data -= 0.1 * param.grad.data",
        "for p in list(model.parameters()):\n            p.data = p.data - 0.1 * p.grad",
    ):
        script = (
            "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(2, 2)\nfor step in range(2):\n"
            "    model(torch.randn(4, 2)).sum().backward()\n    with torch.no_grad():\n"
            f"        {update}\n"
        )
        out = fixed(script, "DDP301")
        assert "if DISTRIBUTED:\n    model = DDP(model" in out, update


def test_a_loop_over_parameters_without_gradients_is_not_training():
    script = src(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 2)
        for p in model.parameters():
            p.data.mul_(0.5)
        print(model(torch.randn(1, 2)))
        """
    )
    assert found(script, "DDP301") == []


# --------------------------------------------------------------------------- models built by helpers
BUILDERS = """
def build(cfg):
    net = nn.Linear(cfg, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return net, opt


def factory(cfg):
    net = nn.Linear(cfg, 2)
    return {"model": net, "opt": torch.optim.SGD(net.parameters(), lr=0.1)}
"""


def _built(call: str) -> str:
    return src(
        f"""
        import torch
        import torch.nn as nn

        {textwrap.indent(src(BUILDERS), "        ").strip()}


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            {call}
            for step in range(2):
                model(torch.randn(4, 2)).sum().backward()
                opt.step()
        """
    )


def test_a_tuple_builder_is_wrapped_in_its_caller():
    out = fixed(_built("model, opt = build(2)"), "DDP301")
    assert "    return net, opt\n" in out and "raw_net" not in out
    assert (
        "    model, opt = build(2)\n    if DISTRIBUTED:\n"
        "        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)\n" in out
    )


def test_a_dict_builder_is_wrapped_where_its_model_is_taken():
    out = fixed(_built('parts = factory(2)\n            model, opt = parts["model"], parts["opt"]'), "DDP301")
    assert '    model, opt = parts["model"], parts["opt"]\n' in out
    out = fixed(_built('model = factory(2)["model"]\n            opt = torch.optim.SGD(model.parameters())'), "DDP301")
    assert out.count("DDP(model") == 1


def test_a_builder_of_a_local_module(tmp_path: Path):
    (tmp_path / "zoo.py").write_text(src("import torch\nimport torch.nn as nn\n\n" + BUILDERS))
    script = _built("model, opt = zoo.build(2)").replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nimport zoo\n"
    )
    out = fixed(script, "DDP301", path=str(tmp_path / "train.py"))
    assert "    model, opt = zoo.build(2)\n" in out


def test_device_ids_follow_the_device_only_when_the_model_moves_with_it():
    moved = fixed(_built("model, opt = build(2)\n            model.to(device)"), "DDP301")
    assert 'device_ids=[LOCAL_RANK] if device.type == "cuda" else None' in moved
    kept = train(
        build='device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n    model = nn.Linear(2, 2)'
    )
    assert "next(model.parameters()).is_cuda" in fixed(kept, "DDP301")


# --------------------------------------------------------------------------- DataParallel
def test_dataparallel_in_an_elif_and_under_an_outer_if():
    script = src(
        """
        import torch
        import torch.nn as nn

        def main(use_gpu=False, force=False):
            model = nn.Linear(2, 2)
            if use_gpu:
                model = model.cuda()
                if torch.cuda.device_count() > 1:
                    model = nn.DataParallel(model)
            elif force:
                print("cpu")
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2)).sum().backward()
            opt.step()
        """
    )
    out = fixed(script, "DDP302")
    assert (
        "    if use_gpu:\n        model = model.cuda()\n"
        "        if torch.cuda.device_count() > 1 and not DISTRIBUTED:\n            model = nn.DataParallel(model)\n"
        '    elif force:\n        print("cpu")\n    if DISTRIBUTED:\n        model = DDP(model, ' in out
    )


def test_dataparallel_with_a_device_move_under_a_condition_keeps_the_move_there():
    script = src(
        """
        import torch
        import torch.nn as nn

        def main():
            model = nn.Linear(2, 2)
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2)).sum().backward()
            opt.step()
        """
    )
    out = fixed(script, "DDP302", unsafe_fixes=True)
    assert "    if torch.cuda.device_count() > 1:\n        model = model.cuda()\n" in out


def test_dataparallel_in_a_loop_is_reported_only():
    script = src(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 2)
        for i in range(2):
            model = nn.DataParallel(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
        opt.step()
        """
    )
    [d] = found(script, "DDP302")
    assert d.fix == "none" and "loop" in d.message


def test_missing_wrap_is_shown_at_the_model_a_self_rebind_copies():
    """`model = Net()` then `model = model`: DDP301 names the line that builds the model, not the copy."""
    script = src(
        """
        import torch
        import torch.nn as nn

        def run():
            model = nn.Linear(2, 1)
            model = model
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(4, 2)).sum().backward()
            opt.step()

        run()
        """
    )
    (d,) = found(script, "DDP301")
    assert d.line == 5
    plain = script.replace("    model = model\n", "")
    (d,) = found(plain, "DDP301")
    assert d.line == 5


def test_self_rebind_before_the_wrap_is_not_taken_for_the_kept_module():
    """`cnn = cnn` (left by removing `.cuda()`) right before the wrap is no name kept for the plain
    module, so the forward through `cnn(...)` in the loop is the wrapper's, not a bypass."""
    script = src(
        """
        import torch
        import torch.nn as nn

        if True:
            cnn = nn.Linear(2, 1)
        else:
            cnn = nn.Linear(2, 3)
        cnn = cnn
        opt = torch.optim.SGD(cnn.parameters(), lr=0.1)
        for step in range(2):
            loss = cnn(torch.randn(4, 2)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """
    )
    result = fix_source(script)
    assert "cnn = cnn\nif DISTRIBUTED:\n    cnn = DDP(" in result.code
    assert result.incomplete == []
    assert [d.code for d in check_source(result.code) if d.code == "DDP309"] == []

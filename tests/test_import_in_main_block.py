"""A script that imports `os` only inside its `if __name__ == "__main__":` block (pytorch-vqvae's
vqvae.py): the environment constants and the process-group setup go at the top of the file and read
`os` before that block runs. The fix adds `import os` at the top (the block keeps its own); before, the
guard found the setup reading `os` above `import os` and withheld the whole conversion."""

from __future__ import annotations

import ast
import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    def main(args):
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
        loader = DataLoader(data, batch_size=4, shuffle=True)
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(args.epochs):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))


    if __name__ == "__main__":
        import argparse
        import os

        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=2)
        parser.add_argument("--out", default=".")
        main(parser.parse_args())
    """
).lstrip()


def test_the_fix_imports_os_at_the_top_and_converts():
    result = fix_source(SCRIPT)
    assert not [d for d in result.diagnostics if d.withheld], [d.withheld for d in result.diagnostics if d.withheld]
    out = result.code
    assert out.startswith("import os\n\nimport torch\n")
    assert out.index("import os\n") < out.index('LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))')
    assert '    if __name__ == "__main__":' not in out and "    import os\n\n    parser" in out  # its own stays
    assert "model = DDP(model" in out and result.incomplete == []
    assert [d for d in check_source(out) if not d.info] == []
    assert fix_source(out).code == out


def test_an_import_at_the_top_is_not_added_again():
    src = "import os\n" + SCRIPT
    out = fix_source(src).code
    assert out.count("\nimport os\n") + out.startswith("import os\n") == 1
    ast.parse(out)


def test_a_name_the_script_imports_in_a_top_level_try_is_at_the_top():
    src = "try:\n    import os\nexcept ImportError:\n    os = None\n" + SCRIPT
    out = fix_source(src).code
    assert out.startswith("try:\n    import os\n") and out.count("import os") == 2  # the try's, the block's


def test_a_late_top_level_import_moves_into_the_first_imports_in_order():
    """awd-lstm-lm's main.py imports `os` below a function: the moved import takes its sorted place
    among the first imports (no blank first line), and the blank line above it stays where it was."""
    src = textwrap.dedent(
        """
        import argparse
        import time

        import torch
        import torch.nn as nn


        def model_save(fn):
            torch.save(model, fn)

        import os
        fn = "x.pt"
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(3):
            loss = model(torch.randn(2, 4)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model_save(fn)
        """
    ).lstrip()
    out = fix_source(src).code
    assert out.startswith("import argparse\nimport os\nimport time\n\nimport torch\n"), out[:200]
    assert "torch.save(raw_model, fn)\n\nfn = " in out, out
    assert out.count("import os\n") == 1
    assert fix_source(out).code == out

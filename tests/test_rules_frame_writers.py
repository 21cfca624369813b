"""Two shapes of a contrastive-training script: a training function that iterates a progress bar made
of its loader parameter in a tuple assignment (`total_loss, total_num, train_bar = 0.0, 0,
tqdm(data_loader)`), and a pandas frame written with `to_csv(path)` every epoch. The loader is a
training loader (DDP201 shards it) and the csv is rank 0's (DDP401), like the checkpoint beside it."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import pandas as pd
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    from tqdm import tqdm


    def train(net, data_loader, train_optimizer):
        total_loss, total_num, train_bar = 0.0, 0, tqdm(data_loader)
        for x, y in train_bar:
            loss = nn.functional.mse_loss(net(x), y)
            train_optimizer.zero_grad()
            loss.backward()
            train_optimizer.step()
            total_num += x.size(0)
        return total_num


    if __name__ == "__main__":
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
        train_loader = DataLoader(data, batch_size=4, shuffle=True, drop_last=True)
        model = nn.Linear(4, 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        results = {"seen": []}
        for epoch in range(1, 3):
            results["seen"].append(train(model, train_loader, optimizer))
            frame = pd.DataFrame(data=results, index=range(1, epoch + 1))
            frame.{write}
    """
).lstrip()


def found(src: str, code: str) -> list:
    return [d for d in check_source(src) if d.code == code]


def test_a_bar_over_the_loader_parameter_is_the_training_loop():
    src = SCRIPT.replace("{write}", "to_csv('stats.csv')")
    [d] = found(src, "DDP201")
    assert (
        d.fix == "safe"
        and d.line
        == src.splitlines().index("    train_loader = DataLoader(data, batch_size=4, shuffle=True, drop_last=True)") + 1
    )
    out = fix_source(src).code
    assert "sampler=train_sampler" in out and "train_sampler.set_epoch(epoch)" in out


def test_a_frame_written_to_a_path_is_rank_zeros():
    src = SCRIPT.replace("{write}", "to_csv('stats.csv', index_label='epoch')")
    [d] = found(src, "DDP401")
    assert d.fix == "safe" and d.line == len(src.splitlines())
    assert "        if RANK == 0:\n            frame.to_csv('stats.csv', index_label='epoch')" in fix_source(src).code


def test_a_frame_turned_into_text_writes_no_file():
    for write in ("to_csv()", "to_json(orient='records')", "to_csv(buf)"):
        src = SCRIPT.replace("{write}", write).replace(
            'results = {"seen": []}', 'results = {"seen": []}\n    import io\n    buf = io.StringIO()'
        )
        assert found(src, "DDP401") == [], write


def test_joblib_dump_to_a_path_is_rank_zeros_and_its_load_waits_for_it():
    """`joblib.dump(obj, path)` writes a file like torch.save; `joblib.load(path)` after it, on every
    rank, reads what rank 0 wrote (DDP410's barrier)."""
    src = SCRIPT.replace("import pandas as pd\n", "import joblib\n").replace(
        "        frame = pd.DataFrame(data=results, index=range(1, epoch + 1))\n        frame.{write}",
        "        joblib.dump(results, 'results.pkl', compress=3)\n        seen = joblib.load('results.pkl')",
    )
    [d] = found(src, "DDP401")
    assert d.fix == "safe" and src.splitlines()[d.line - 1].strip().startswith("joblib.dump(")
    [race] = found(src, "DDP410")
    assert race.fix == "safe"
    out = fix_source(src).code
    assert "        if RANK == 0:\n            joblib.dump(results, 'results.pkl', compress=3)" in out
    assert out.index("dist.barrier()") < out.index("seen = joblib.load('results.pkl')")


FORMATTED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    best, best_epoch = 1e9, 0
    for epoch in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.save(model.state_dict(), '{}.pkl'.format(epoch))
        if loss.item() < best:
            best, best_epoch = loss.item(), epoch
    model.load_state_dict(torch.load('{}.pkl'.format(best_epoch)))
    """
).lstrip()


def test_paths_built_by_a_template_format_are_the_same_file():
    """`'{}.pkl'.format(epoch)` saved on rank 0 and `'{}.pkl'.format(best_epoch)` loaded on every rank:
    one file, so the load waits at a barrier (DDP410); another template is another file."""
    [d] = found(FORMATTED, "DDP410")
    assert d.fix == "safe" and "torch.load" in FORMATTED.splitlines()[d.line - 1]
    out = fix_source(FORMATTED).code
    assert out.index("dist.barrier()") < out.index("torch.load('{}.pkl'.format(best_epoch)")
    other = FORMATTED.replace("torch.load('{}.pkl'.format(best_epoch))", "torch.load('best_{}.pt'.format(best_epoch))")
    assert found(other, "DDP410") == []

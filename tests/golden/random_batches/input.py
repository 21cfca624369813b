"""A small next-step model trained on random windows drawn from one long series each step."""
import torch
import torch.nn as nn

BLOCK = 8
BATCH = 4


def get_batch(series):
    ix = torch.randint(len(series) - BLOCK - 1, (BATCH,))
    x = torch.stack([series[i : i + BLOCK] for i in ix])
    y = torch.stack([series[i + 1 : i + 1 + BLOCK] for i in ix])
    return x, y


def main():
    torch.manual_seed(1337)
    series = torch.sin(torch.arange(400) / 7.0) + 0.1 * torch.randn(400)
    model = nn.Sequential(nn.Linear(BLOCK, 32), nn.Tanh(), nn.Linear(32, BLOCK))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(30):
        xb, yb = get_batch(series)
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

"""Régression linéaire — données synthétiques 📈 (one GPU)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    étiquette, device = "modèle 😀", torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)

    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(device)

    for epoch in range(2):
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        titre = "époque 😀"
        print(f"{titre} {epoch}")
        état = {"poids": model.state_dict()}
        torch.save(état, "ckpt.pt")


if __name__ == "__main__":
    main()

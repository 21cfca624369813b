import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    use_cuda = torch.cuda.is_available()
    loader = DataLoader(TensorDataset(torch.randn(32, 6), torch.randint(0, 3, (32,))), batch_size=4, shuffle=True)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    print(model)

    # optimizer and loss
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    criterion = nn.CrossEntropyLoss()
    print(optimizer)
    print(criterion)

    if use_cuda:
        model.cuda()
        criterion = criterion.cuda()

    for epoch in range(2):
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: {total / len(loader):.4f}")


if __name__ == "__main__":
    main()

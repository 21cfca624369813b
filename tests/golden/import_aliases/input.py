import torch as t
from torch import nn, optim
from torch.utils.data import DataLoader as DL
from torch.utils.data import TensorDataset as TD


def run():
    t.manual_seed(0)
    dl = DL(TD(t.randn(50, 2), t.randn(50, 1)), batch_size=10, shuffle=True)
    net = nn.Linear(2, 1)
    opt = optim.SGD(net.parameters(), lr=0.1)
    for ep in range(2):
        for a, b in dl:
            opt.zero_grad()
            nn.functional.mse_loss(net(a), b).backward()
            opt.step()
        print("ep", ep)
    t.save(net.state_dict(), "aliases.pt")


if __name__ == "__main__":
    run()

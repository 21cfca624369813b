import glob
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

OUT = "runs"

torch.manual_seed(0)
if os.path.isdir(OUT):
    shutil.rmtree(OUT)  # start from an empty run folder
os.makedirs(OUT, exist_ok=True)

loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(3):
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    torch.save(model.state_dict(), os.path.join(OUT, "{}.pkl".format(epoch)))
    # keep only the newest weights
    for name in glob.glob(os.path.join(OUT, "*.pkl")):
        if int(os.path.basename(name).split(".")[0]) < epoch:
            os.remove(name)
    print("epoch", epoch, "loss", total)

print("kept", sorted(os.listdir(OUT)))

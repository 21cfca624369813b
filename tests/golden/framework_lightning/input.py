"""Train with Lightning: the Trainer picks the strategy (ddp on several devices) and the sampler."""
import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    trainer = L.Trainer(max_epochs=2, accelerator="auto", devices="auto", strategy="ddp")
    trainer.fit(Regressor(), loader)
    torch.save(trainer.model.state_dict(), "model.pt")

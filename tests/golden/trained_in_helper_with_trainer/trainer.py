"""One pass over the training data per call, the way many projects keep their training step."""


class Train:
    def __init__(self, model, data_loader, optim, criterion):
        self.model = model
        self.data_loader = data_loader
        self.optim = optim
        self.criterion = criterion

    def run_epoch(self):
        self.model.train()
        epoch_loss = 0.0
        for inputs, labels in self.data_loader:
            outputs = self.model(inputs)
            loss = self.criterion(outputs, labels)
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            epoch_loss += loss.item()
        return epoch_loss / len(self.data_loader)

# A module-level script: the model is built in the __main__ block and put in DataParallel
# when several GPUs are present; train() and test() read the global model.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
train_loader = DataLoader(TensorDataset(torch.randn(64, 5), torch.randint(0, 3, (64,))), batch_size=8, shuffle=True)
test_loader = DataLoader(TensorDataset(torch.randn(16, 5), torch.randint(0, 3, (16,))), batch_size=8)
N_EPOCHS = 2


class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return self.fc(x)


def train():
    total = 0.0
    for x, y in train_loader:
        output = classifier(x)
        loss = criterion(output, y)
        classifier.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def test():
    correct = 0
    with torch.no_grad():
        for x, y in test_loader:
            correct += (classifier(x).argmax(1) == y).sum().item()
    print(f"accuracy {correct}/{len(test_loader.dataset)}")


if __name__ == "__main__":
    classifier = Classifier(5, 3)
    if torch.cuda.device_count() > 1:
        print("Let's use", torch.cuda.device_count(), "GPUs!")
        classifier = nn.DataParallel(classifier)

    if torch.cuda.is_available():
        classifier.cuda()

    optimizer = torch.optim.Adam(classifier.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(1, N_EPOCHS + 1):
        loss = train()
        print(f"epoch {epoch} loss {loss:.3f}")
        test()

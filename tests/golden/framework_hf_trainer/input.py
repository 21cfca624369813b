"""Fine-tune with the Hugging Face Trainer: it runs the loop, and DDP when launched with torchrun."""
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"input_ids": torch.randint(0, 100, (16,)), "labels": torch.tensor(i % 2)}


def main():
    model = AutoModelForSequenceClassification.from_pretrained("tiny-bert", num_labels=2)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, num_train_epochs=1)
    trainer = Trainer(model=model, args=args, train_dataset=Pairs())
    trainer.train()
    trainer.save_model("out/final")


if __name__ == "__main__":
    main()

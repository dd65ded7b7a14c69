"""Rules for Hugging Face transformers: what TrainingArguments refuses when it is built."""

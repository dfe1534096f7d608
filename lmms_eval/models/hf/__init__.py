"""Helpers shared by the transformers backends: processor loading without torchvision, tiny models."""

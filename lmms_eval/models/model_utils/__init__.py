"""Helpers for model files, under the module names the published package gives them
(``media_encoder``, ``gen_metrics``); the implementations are this package's own."""

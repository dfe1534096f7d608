"""Dataset loading, below ``api/``: Hugging Face Hub datasets (with an offline-aware reachability
probe), local JSON/JSONL/Parquet/CSV/Arrow files and ``save_to_disk`` folders, ``--dataset_root``
copies of Hub datasets, and the video files of video tasks.

* :mod:`lmms_eval.data.load`: :func:`~lmms_eval.data.load.load_dataset_splits`, the one entry point;
* :mod:`lmms_eval.data.files`: ``data_files`` patterns and local paths;
* :mod:`lmms_eval.data.dataset_root`: local copies of Hub datasets (``--dataset_root``);
* :mod:`lmms_eval.data.hub`: whether the Hub can be reached;
* :mod:`lmms_eval.data.json_native`: a fast JSON/JSONL reader with one-line errors;
* :mod:`lmms_eval.data.video_files`: video files of tasks with ``dataset_kwargs.video``.

Importing this package imports nothing heavy; ``datasets`` is imported when a dataset loads.
"""

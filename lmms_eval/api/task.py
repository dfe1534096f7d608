"""``ConfigurableTask``: a task built from a validated :class:`TaskConfig`.

It owns the dataset splits, turns documents into :class:`Instance` requests (the layouts of the
model guide), and scores filtered responses through ``process_results`` or the built-in metrics.
"""

from __future__ import annotations

import copy
import inspect
import logging
import os
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, TypeVar

from lmms_eval.api.doc_fields import (
    BoundDocFunction,
    call_with_kwargs,
    media_part,
    resolve_choices,
    resolve_text,
    resolve_visual,
)
from lmms_eval.api.filter import FilterEnsemble, build_filter_ensembles
from lmms_eval.api.instance import Instance
from lmms_eval.api.registry import DEFAULT_METRIC_REGISTRY, get_aggregation, get_metric
from lmms_eval.api.task_config import MetricConfig, TaskConfig
from lmms_eval.errors import ConfigError, DatasetError, LmmsEvalError
from lmms_eval.utils import canonical_json, hash_string

logger = logging.getLogger(__name__)

T = TypeVar("T")


class TaskDefinitionError(ConfigError):
    """A bug in the task itself, not in one document (e.g. ``process_results`` returning a string):
    never turned into a per-document failure."""


@dataclass(frozen=True)
class DocFailure:
    """One document whose ``doc_to_*`` or ``process_results`` raised: recorded as failed, not scored."""

    task: str
    doc_id: int
    function: str  # doc_to_text, doc_to_visual, process_results, ...
    error: str  # "KeyError: 'question'"
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_exception(cls, task: str, doc_id: int, function: str, exc: BaseException) -> DocFailure:
        text = " ".join(str(exc).split())
        if len(text) > 300:
            text = text[:297] + "..."
        return cls(
            task, doc_id, function, f"{type(exc).__name__}: {text}" if text else type(exc).__name__, exc
        )

    @property
    def message(self) -> str:
        """The failure as recorded on the request / in the samples file (kind ``input``)."""
        return f"input: task '{self.task}' doc {self.doc_id}: {self.function} raised {self.error}"

    def same_kind(self, other: DocFailure) -> bool:
        return self.function == other.function and type(self.exception) is type(other.exception)


def raise_if_every_doc_failed(failures: Sequence[DocFailure], total: int, stage: str) -> None:
    """Raise when all ``total`` documents failed the same way: a bug in the task, not in its data.

    An :class:`LmmsEvalError` (an unknown template field, a metric the output type lacks) is raised
    as it is; anything else as a :class:`ConfigError` naming the task, the function and the first error.
    """
    if not failures or len(failures) < total:
        return
    first = failures[0]
    if not all(first.same_kind(f) for f in failures[1:]):
        return
    if isinstance(first.exception, LmmsEvalError):
        raise first.exception
    raise ConfigError(
        f"task '{first.task}': {first.function} raised on every document ({total}) while {stage}, so the "
        f"task itself is broken; the first (doc {first.doc_id}): {first.error}"
    )


class _InputError(Exception):
    """A ``doc_to_*`` function raised while one document's requests were built."""

    def __init__(self, function: str, error: Exception) -> None:
        super().__init__(f"{function}: {error}")
        self.function = function
        self.error = error


def _guarded(function: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except Exception as exc:
        raise _InputError(function, exc) from exc


class _Unbuilt:
    """Stands for the arguments of a request that could not be built (never sent, never cached)."""

    def __repr__(self) -> str:
        return "<not built>"


UNBUILT = _Unbuilt()


def select_model_specific(table: dict[str, Any] | None, model_names: Sequence[str]) -> Any:
    """Pick a model's entry of a ``{model: ..., default: ...}`` table.

    A model's own mapping is merged over ``default`` (the published package replaced it outright,
    which silently dropped default prompt keys); without a matching key, ``default`` is used.
    """
    if not table:
        return None
    default = table.get("default")
    for name in model_names:
        if name and name in table:
            specific = table[name]
            if isinstance(default, dict) and isinstance(specific, dict):
                return {**default, **specific}
            return specific
    return default


@dataclass(frozen=True)
class TaskRunOptions:
    """The run-level options a task receives, once, when the evaluator configures it
    (:meth:`ConfigurableTask.configure`). The task reads them; nothing sets them from outside."""

    model_names: tuple[str, ...] = ()
    gen_kwargs: Mapping[str, Any] = field(default_factory=dict)
    num_fewshot: int | None = None  # overrides the task's own, except for tasks that set 0
    repeats: int | None = None
    predict_only: bool = False
    system_instruction: str | None = None
    fewshot_seed: int | None = None  # None: the default seed 1234
    dataset_root: str | None = None  # local copies of Hub datasets (--dataset_root)
    fewshot_as_multiturn: bool = False
    process_with_media: bool = False


class ConfigurableTask:
    """A YAML-defined task."""

    OUTPUT_TYPE: str

    def __init__(
        self,
        config: TaskConfig | Mapping[str, Any],
        yaml_path: str | None = None,
        model_names: Sequence[str] = (),
    ) -> None:
        if not isinstance(config, TaskConfig):  # a YAML mapping, as published task classes pass it
            config = TaskConfig.from_yaml_dict(dict(config), yaml_path or "<task class>")
        self.config = config
        self.yaml_path = yaml_path
        self.base_dir = os.path.dirname(yaml_path) if yaml_path else os.getcwd()
        self.model_names = tuple(model_names)
        self.OUTPUT_TYPE = config.output_type
        self._dataset: dict[str, Any] | None = None
        self._eval_docs: Any = None
        self._scoring_docs: Any = None
        self.options = TaskRunOptions(model_names=self.model_names)
        if config.num_fewshot and not self._has_fewshot_source():
            raise ConfigError(
                f"{yaml_path}: task '{config.task}': num_fewshot needs a fewshot_split or training_split"
            )

    # -- identity ---------------------------------------------------------------------------------

    @property
    def task_name(self) -> str:
        return self.config.task

    @property
    def VERSION(self) -> Any:
        return self.config.version

    @property
    def alias(self) -> str:
        return self.config.task_alias or self.config.task

    # -- run options ------------------------------------------------------------------------------

    def configure(self, options: TaskRunOptions) -> None:
        """Take the run's options (before any request is built): ``num_fewshot`` and ``repeats``
        become the task's effective config, the rest is read from :attr:`options`."""
        update: dict[str, Any] = {"num_fewshot": self.config.num_fewshot or 0}
        if options.num_fewshot is not None and self.config.num_fewshot != 0:
            if options.num_fewshot and not self._has_fewshot_source():
                raise ConfigError(
                    f"task '{self.task_name}' has no split to draw {options.num_fewshot} few-shot examples from"
                )
            update["num_fewshot"] = options.num_fewshot
        if options.repeats is not None:
            update["repeats"] = int(options.repeats)
        if options.fewshot_as_multiturn:
            update["fewshot_as_multiturn"] = True
        if options.dataset_root != self.options.dataset_root:
            self._dataset = self._eval_docs = None
            self.__dict__.pop("fewshot_docs", None)
        self.config = self.config.model_copy(update=update)
        self.options = options
        self._scoring_docs = None
        self.__dict__.pop("metric_configs", None)
        self.set_model_names(*options.model_names)

    @property
    def system_instruction(self) -> str | None:
        return self.options.system_instruction

    @property
    def predict_only(self) -> bool:
        return self.options.predict_only

    @property
    def dataset_root(self) -> str | None:
        return self.options.dataset_root

    @property
    def fewshot_seed(self) -> int:
        return 1234 if self.options.fewshot_seed is None else self.options.fewshot_seed

    def set_model_names(self, *names: str | None) -> None:
        self.model_names = tuple(n for n in names if n)
        for cached in ("specific_kwargs", "target_kwargs"):
            self.__dict__.pop(cached, None)

    @cached_property
    def specific_kwargs(self) -> Any:
        return select_model_specific(self.config.lmms_eval_specific_kwargs, self.model_names)

    @cached_property
    def target_kwargs(self) -> Any:
        return select_model_specific(self.config.model_specific_target_kwargs, self.model_names)

    # -- data -------------------------------------------------------------------------------------

    def download(self, dataset_loader: Callable[..., dict[str, Any]] | None = None) -> None:
        """Load the dataset splits (idempotent)."""
        if self._dataset is not None:
            return
        from lmms_eval.data.load import load_dataset_splits

        if dataset_loader is not None:
            self._dataset = dataset_loader(
                self.config.dataset_path,
                self.config.dataset_name,
                dict(self.config.dataset_kwargs),
                self.base_dir,
                self.task_name,
            )
            return
        self._dataset = load_dataset_splits(
            self.config.dataset_path,
            self.config.dataset_name,
            dict(self.config.dataset_kwargs),
            self.base_dir,
            self.task_name,
            dataset_root=self.dataset_root,
        )

    @property
    def dataset(self) -> dict[str, Any]:
        self.download()
        assert self._dataset is not None
        return self._dataset

    def _fewshot_samples(self) -> Any:
        """``fewshot_config.samples``: fixed few-shot docs (a list, or a function returning one)."""
        return (self.config.fewshot_config or {}).get("samples")

    def _has_fewshot_source(self) -> bool:
        return self._fewshot_samples() is not None or self._fewshot_split_name() is not None

    def _fewshot_split_name(self) -> str | None:
        return self.config.fewshot_split or self.config.training_split or self.config.validation_split

    @property
    def eval_split(self) -> str:
        split = self.config.test_split or self.config.validation_split
        if not split:
            raise ConfigError(
                f"{self.yaml_path}: task '{self.task_name}' needs test_split or validation_split"
            )
        return split

    def _split(self, name: str) -> Any:
        data = self.dataset
        if name not in data:
            raise DatasetError(
                f"task '{self.task_name}': split '{name}' is not in dataset '{self.config.dataset_path}' "
                f"(splits: {', '.join(sorted(data))})"
            )
        docs = data[name]
        if self.config.process_docs is not None:
            if hasattr(docs, "to_hf"):
                docs = docs.to_hf()
            fn = self.config.process_docs
            if "load_config" in _parameters(fn):
                docs = fn(docs, load_config=self.load_config)
            else:
                docs = fn(docs)
        return docs

    def load_config(self, dataset_name: str | None, split: str) -> Any:
        """Split ``split`` of another config of this task's dataset (from ``--dataset_root`` too).

        ``process_docs`` functions that take a ``load_config`` keyword get this method, to join in
        data kept in a second config (GQA keeps its images apart from its questions).
        """
        from lmms_eval.data.load import load_dataset_splits

        splits = load_dataset_splits(
            self.config.dataset_path,
            dataset_name,
            {k: v for k, v in self.config.dataset_kwargs.items() if k != "split"},
            self.base_dir,
            self.task_name,
            dataset_root=self.dataset_root,
        )
        if split not in splits:
            raise DatasetError(
                f"task '{self.task_name}': split '{split}' is not in config '{dataset_name}' of "
                f"'{self.config.dataset_path}' (splits: {', '.join(sorted(splits))})"
            )
        return splits[split]

    @property
    def eval_docs(self) -> Any:
        """The evaluated split after ``process_docs``; models index it by doc id."""
        if self._eval_docs is None:
            self._eval_docs = self._split(self.eval_split)
        return self._eval_docs

    @property
    def scoring_docs(self) -> Any:
        """The docs passed to ``process_results``: media columns removed unless the task asks for them."""
        if self._scoring_docs is None:
            from lmms_eval.data.load import without_media

            docs = self.eval_docs
            keep = self.config.process_results_use_image or self.options.process_with_media
            self._scoring_docs = docs if keep else without_media(docs)
        return self._scoring_docs

    def model_docs(self) -> dict[str, Any]:
        """What models see as ``task_dict[task]``: ``{split: docs}`` with ``process_docs`` applied."""
        return {self.eval_split: self.eval_docs}

    @cached_property
    def fewshot_docs(self) -> Any:
        samples = self._fewshot_samples()
        if samples is not None:  # fixed examples take precedence over any split
            found: Any = samples() if callable(samples) else samples
            return list(found)
        split = self._fewshot_split_name()
        return self._split(split) if split else []

    # -- doc_to_* -----------------------------------------------------------------------------------

    def doc_to_text(self, doc: Any) -> Any:
        return resolve_text(self.config.doc_to_text, doc, self.specific_kwargs, self.task_name, "doc_to_text")

    def doc_to_target(self, doc: Any) -> Any:
        spec = self.config.doc_to_target
        if callable(spec):
            return call_with_kwargs(spec, doc, self.target_kwargs, name="target")
        return resolve_text(spec, doc, None, self.task_name, "doc_to_target")

    def doc_to_choice(self, doc: Any) -> list[str]:
        if self.config.doc_to_choice is None:
            raise ConfigError(f"task '{self.task_name}' has no doc_to_choice")
        return resolve_choices(self.config.doc_to_choice, doc, self.task_name)

    def doc_to_visual(self, doc: Any) -> list[Any]:
        return resolve_visual(self.config.doc_to_visual, doc, self.specific_kwargs, self.task_name)

    def doc_to_audio(self, doc: Any) -> list[Any]:
        return resolve_visual(self.config.doc_to_audio, doc, self.specific_kwargs, self.task_name)

    def gold_index(self, doc: Any) -> int | list[int]:
        """The index (or indices) of the correct choice of a multiple-choice doc."""
        target = self.doc_to_target(doc)
        choices = self.doc_to_choice(doc)

        def one(value: Any) -> int:
            if isinstance(value, bool):
                return int(value)
            if isinstance(value, int):
                return value
            text = str(value)
            if text in choices:
                return choices.index(text)
            if text.strip().isdigit():
                return int(text.strip())
            if len(text.strip()) == 1 and text.strip().isalpha():
                return ord(text.strip().upper()) - ord("A")
            raise ConfigError(
                f"task '{self.task_name}': target {value!r} is neither a choice nor an index of {choices}"
            )

        return [one(t) for t in target] if isinstance(target, list) else one(target)

    def gold_text(self, doc: Any) -> Any:
        """The target as text (``choices[target]`` for tasks with choices)."""
        target = self.doc_to_target(doc)
        if self.config.doc_to_choice is not None:
            choices = self.doc_to_choice(doc)
            indices = self.gold_index(doc)
            if isinstance(indices, list):
                return [choices[i] for i in indices]
            return choices[indices]
        return target

    # -- prompts ----------------------------------------------------------------------------------

    def _fewshot_examples(self, doc_id: int) -> list[Any]:
        k = self.config.num_fewshot or 0
        if k <= 0:
            return []
        pool = self.fewshot_docs
        same_split = self._fewshot_samples() is None and self._fewshot_split_name() == self.eval_split
        candidates = [i for i in range(len(pool)) if not (same_split and i == doc_id)]
        sampler = (self.config.fewshot_config or {}).get("sampler", "default")
        if sampler == "first_n":
            chosen = candidates[:k]
        else:
            rnd = random.Random(f"{self.fewshot_seed}:{self.task_name}:{doc_id}")
            chosen = rnd.sample(candidates, min(k, len(candidates)))
        return [pool[i] for i in chosen]

    def fewshot_context(self, doc: Any, doc_id: int, include_system: bool = True) -> str:
        """[system instruction +] description + few-shot examples + the doc's own text, as one string."""
        parts: list[str] = []
        for example in self._fewshot_examples(doc_id):
            parts.append(
                f"{self.doc_to_text(example)}{self.config.target_delimiter}{self._shot_target(example)}"
            )
        text = self.doc_to_text(doc)
        parts.append("" if text is None else str(text))
        context = self.config.description + self.config.fewshot_delimiter.join(parts)
        if self.system_instruction and include_system:
            context = f"{self.system_instruction}\n\n{context}"
        return context

    def _shot_target(self, example: Any) -> str:
        target = self.gold_text(example)
        return str(target[0] if isinstance(target, list) else target)

    def _fewshot_turns(self, doc_id: int) -> list[dict[str, Any]]:
        """Few-shot examples as user/assistant turns (``fewshot_as_multiturn``), with their visuals."""
        turns: list[dict[str, Any]] = []
        for example in self._fewshot_examples(doc_id):
            content = [media_part(v) for v in self.doc_to_visual(example)]
            content.append({"type": "text", "text": str(self.doc_to_text(example))})
            turns.append({"role": "user", "content": content})
            turns.append(
                {"role": "assistant", "content": [{"type": "text", "text": self._shot_target(example)}]}
            )
        return turns

    def build_messages(self, doc: Any, doc_id: int | None = None, **extra: Any) -> list[dict[str, Any]]:
        """``doc_to_messages`` for one doc: the task's function, or visuals + audio + text.

        With ``fewshot_as_multiturn`` the few-shot examples come first, one user/assistant pair each;
        otherwise they are part of the doc's text.
        """
        spec = self.config.doc_to_messages
        index = doc_id if doc_id is not None else -1
        multiturn = self.config.fewshot_as_multiturn and bool(self.config.num_fewshot)
        turns = self._fewshot_turns(index) if multiturn else []
        if spec is not None:
            messages = BoundDocFunction(spec, self.specific_kwargs)(doc, **extra)
            if hasattr(messages, "messages"):  # a ChatMessages object
                messages = [m.model_dump() for m in messages.messages]
        else:
            content = [media_part(v) for v in self.doc_to_visual(doc)]
            content += [{"type": "audio", "url": a} for a in self.doc_to_audio(doc)]
            if multiturn:
                own = self.doc_to_text(doc)
                text = self.config.description + ("" if own is None else str(own))
            else:
                text = self.fewshot_context(doc, index, include_system=False)
            content.append({"type": "text", "text": text})
            messages = [{"role": "user", "content": content}]
        if turns:
            head = messages[:1] if messages and messages[0].get("role") == "system" else []
            messages = [*head, *turns, *messages[len(head) :]]
        if self.system_instruction and not (messages and messages[0].get("role") == "system"):
            messages = [
                {"role": "system", "content": [{"type": "text", "text": self.system_instruction}]},
                *messages,
            ]
        return messages

    def generation_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.config.generation_kwargs or {})
        specific = select_model_specific(self.config.model_specific_generation_kwargs, self.model_names)
        if isinstance(specific, dict):
            kwargs.update(specific)
        kwargs.update(self.options.gen_kwargs)
        until = kwargs.get("until")
        if until is not None and not isinstance(until, (str, list)):
            raise ConfigError(
                f"task '{self.task_name}': generation_kwargs.until must be a string or a list of strings"
            )
        if isinstance(until, str):
            kwargs["until"] = [until]
        if "temperature" in kwargs and kwargs["temperature"] is not None:
            kwargs["temperature"] = float(kwargs["temperature"])
        return kwargs

    # -- requests ---------------------------------------------------------------------------------

    def doc_ids(self, limit: int | None, offset: int, rank: int = 0, world_size: int = 1) -> list[int]:
        """The doc ids this rank evaluates: ``offset .. offset+limit`` strided by ``world_size``."""
        total = len(self.eval_docs)
        end = total if limit is None else min(total, offset + limit)
        return list(range(offset + rank, end, world_size))

    def construct_requests(self, doc_id: int, doc: Any, chat: bool) -> list[Instance]:
        """The requests of one doc. A doc whose ``doc_to_*`` raises gives one request that carries
        the failure (``input: task 'x' doc 3: doc_to_text raised KeyError: 'question'``) and is
        never sent; the doc is recorded as failed and left out of scoring."""
        return self.build_doc_requests(doc_id, doc, chat)[0]

    def build_doc_requests(
        self, doc_id: int, doc: Any, chat: bool
    ) -> tuple[list[Instance], DocFailure | None]:
        """:meth:`construct_requests` plus the doc's failure, if its inputs raised."""
        meta = {
            "task": self.task_name,
            "doc_id": doc_id,
            "repeats": self.config.repeats,
            "split": self.eval_split,
        }
        try:
            return self._requests(doc_id, doc, chat, meta), None
        except _InputError as exc:
            failure = DocFailure.from_exception(self.task_name, doc_id, exc.function, exc.error)
            return [self._failed_request(chat, meta, failure.message)], failure

    def check_doc_inputs(self, doc_id: int, doc: Any, chat: bool) -> DocFailure | None:
        """Call the ``doc_to_*`` functions the doc's requests need; the failure if one raises."""
        try:
            self._inputs(doc_id, doc, chat)
        except _InputError as exc:
            return DocFailure.from_exception(self.task_name, doc_id, exc.function, exc.error)
        return None

    def _inputs(self, doc_id: int, doc: Any, chat: bool) -> str | None:
        """Call every ``doc_to_*`` function the doc's requests use, now rather than in the model, so
        a doc that breaks one fails here. Returns the context text of simple requests."""
        cfg = self.config
        context: str | None = None
        if chat and cfg.doc_to_messages is not None:
            _guarded("doc_to_messages", lambda: self.build_messages(doc, doc_id))
        else:
            if cfg.doc_to_visual is not None:
                _guarded("doc_to_visual", lambda: self.doc_to_visual(doc))
            if cfg.doc_to_audio is not None:
                _guarded("doc_to_audio", lambda: self.doc_to_audio(doc))
            context = _guarded(
                "doc_to_text", lambda: self.fewshot_context(doc, doc_id, include_system=not chat)
            )
        if cfg.output_type == "loglikelihood":
            _guarded("doc_to_target", lambda: _target_adapter(self)(doc))
        elif cfg.output_type == "multiple_choice":
            _guarded("doc_to_choice", lambda: self.doc_to_choice(doc))
        elif self._builtin_scoring() and cfg.doc_to_target is not None:
            _guarded("doc_to_target", lambda: self.gold_text(doc))  # the built-in metrics need it
        return context

    def _builtin_scoring(self) -> bool:
        cfg = self.config
        return cfg.process_results is None and cfg.process_results_batch is None and not self.predict_only

    def _requests(self, doc_id: int, doc: Any, chat: bool, meta: dict[str, Any]) -> list[Instance]:
        context = self._inputs(doc_id, doc, chat)
        split = meta["split"]
        visual = partial(
            resolve_visual, self.config.doc_to_visual, kwargs=self.specific_kwargs, task=self.task_name
        )
        visual_fn = BoundDocFunction(_visual_adapter(visual))
        output_type = self.config.output_type
        messages_fn = BoundDocFunction(_messages_adapter(self, doc_id)) if chat else None
        if output_type.startswith("generate"):  # generate_until, _multi_round, _agentic, visual_cot
            gen_kwargs = copy.deepcopy(self.generation_kwargs())
            agentic = output_type == "generate_until_agentic"  # 7 args for chat models too
            if chat and not agentic:
                args: tuple[Any, ...] = (messages_fn, gen_kwargs, doc_id, self.task_name, split)
            elif output_type == "generate_until_multi_round" or agentic:
                text_fn = (
                    BoundDocFunction(self.config.doc_to_text, self.specific_kwargs)
                    if callable(self.config.doc_to_text)
                    else None
                )
                if context is None:  # a chat task with doc_to_messages: the loop starts from doc_to_text
                    context = _guarded("doc_to_text", lambda: self.fewshot_context(doc, doc_id, False))
                args = (context, gen_kwargs, visual_fn, text_fn, doc_id, self.task_name, split)
            else:
                args = (context, gen_kwargs, visual_fn, doc_id, self.task_name, split)
            return [Instance(output_type, args, 0, dict(meta))]  # type: ignore[arg-type]
        first: Any = messages_fn if chat else context
        if output_type == "loglikelihood":
            target_fn = BoundDocFunction(_target_adapter(self))
            args = (first, target_fn, visual_fn, doc_id, self.task_name, split)
            return [Instance("loglikelihood", args, 0, dict(meta))]
        choices = self.doc_to_choice(doc)
        return [
            Instance(
                "loglikelihood",
                (first, f"{self.config.target_delimiter}{choice}", visual_fn, doc_id, self.task_name, split),
                i,
                dict(meta),
            )
            for i, choice in enumerate(choices)
        ]

    def _failed_request(self, chat: bool, meta: dict[str, Any], message: str) -> Instance:
        """A placeholder request of the doc's type carrying ``message``; inference never sends it."""
        output_type = self.config.output_type
        request_type = output_type if output_type.startswith("generate") else "loglikelihood"
        if request_type == "generate_until_agentic":
            n_args = 7
        elif chat and request_type != "loglikelihood":
            n_args = 5
        else:
            n_args = 7 if request_type == "generate_until_multi_round" else 6
        args = (UNBUILT,) * (n_args - 3) + (meta["doc_id"], self.task_name, meta["split"])
        return Instance(request_type, args, 0, dict(meta), failures=[message])  # type: ignore[arg-type]

    def build_all_requests(
        self, chat: bool, limit: int | None = None, offset: int = 0, rank: int = 0, world_size: int = 1
    ) -> list[Instance]:
        """The requests of the selected docs. Docs whose inputs raise carry their failure; when every
        doc fails the same way the task is broken and this raises a :class:`ConfigError`."""
        docs = self.eval_docs
        ids = self.doc_ids(limit, offset, rank, world_size)
        requests: list[Instance] = []
        failures: list[DocFailure] = []
        for doc_id in ids:
            built, failure = self.build_doc_requests(doc_id, docs[doc_id], chat)
            requests.extend(built)
            if failure is not None:
                failures.append(failure)
        raise_if_every_doc_failed(failures, len(ids), "building its requests")
        if failures:
            logger.warning(
                "task %s: %d of %d documents could not be turned into requests and are recorded as "
                "failed; the first: %s",
                self.task_name,
                len(failures),
                len(ids),
                failures[0].message,
            )
        return requests

    # -- filters and scoring ----------------------------------------------------------------------

    @cached_property
    def filters(self) -> list[FilterEnsemble]:
        return build_filter_ensembles(self.config.filter_list, self.task_name)

    @cached_property
    def metric_configs(self) -> list[MetricConfig]:
        if self.predict_only:
            return [MetricConfig(metric="bypass", aggregation="bypass", higher_is_better=None)]
        if self.config.metric_list is not None:
            return list(self.config.metric_list)
        if self.config.process_results is not None or self.config.process_results_batch is not None:
            return []  # every key process_results returns, aggregated with mean
        return [MetricConfig(metric=name) for name in DEFAULT_METRIC_REGISTRY[self.config.output_type]]

    def process_results(self, doc: Any, results: list[Any]) -> dict[str, Any]:
        """Per-doc metric values from the filtered responses of the doc's requests."""
        if self.predict_only:
            return {"bypass": None}
        fn = self.config.process_results
        if fn is not None:
            out = fn(doc, results)
            if not isinstance(out, dict):
                raise TaskDefinitionError(
                    f"task '{self.task_name}': process_results ({_short_name(fn)}) returned a "
                    f"{type(out).__name__}; it must return a dict of metric values such as {{'accuracy': 1.0}}"
                )
            return out
        from lmms_eval.api.scoring import builtin_process_results

        return builtin_process_results(self, doc, results)

    def score_doc(self, doc_id: int, doc: Any, results: list[Any]) -> dict[str, Any] | DocFailure:
        """:meth:`process_results` of one doc, or the doc's failure if it raised (a task bug such
        as a non-dict return value is raised)."""
        try:
            return self.process_results(doc, results)
        except TaskDefinitionError:
            raise
        except Exception as exc:
            return DocFailure.from_exception(self.task_name, doc_id, "process_results", exc)

    def score_docs(
        self, docs: list[Any], results: list[list[Any]], doc_ids: Sequence[int] | None = None
    ) -> Iterator[dict[str, Any] | DocFailure]:
        """Per-doc metric values, in order: from one call of the task's ``process_results_batch``
        (e.g. one concurrent batch of LLM-judge requests), else lazily from ``process_results``,
        where a doc whose scoring raises gives its :class:`DocFailure` instead."""
        batch_fn = self.config.process_results_batch
        if batch_fn is None or self.predict_only:
            ids = list(doc_ids) if doc_ids is not None else list(range(len(docs)))
            return (self.score_doc(i, doc, result) for i, doc, result in zip(ids, docs, results))
        out = batch_fn(docs, results)
        if not isinstance(out, list) or len(out) != len(docs) or not all(isinstance(m, dict) for m in out):
            raise TaskDefinitionError(
                f"task '{self.task_name}': process_results_batch ({_short_name(batch_fn)}) must "
                f"return one dict per doc ({len(docs)}), got {type(out).__name__}"
            )
        return iter(out)

    def aggregation(self) -> dict[str, Callable[..., Any]]:
        out: dict[str, Callable[..., Any]] = {}
        for cfg in self.metric_configs:
            agg = cfg.aggregation
            if callable(agg):
                out[cfg.name] = agg
            elif isinstance(agg, str):
                out[cfg.name] = get_aggregation(agg)
            else:
                try:
                    out[cfg.name] = get_aggregation(get_metric(cfg.name).aggregation)
                except LookupError:
                    out[cfg.name] = get_aggregation("mean")
        return out

    def higher_is_better(self) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for cfg in self.metric_configs:
            if cfg.higher_is_better is not None:
                out[cfg.name] = cfg.higher_is_better
            else:
                try:
                    out[cfg.name] = get_metric(cfg.name).higher_is_better
                except LookupError:
                    out[cfg.name] = True
        return out

    # -- config dump ------------------------------------------------------------------------------

    def dump_config(self) -> dict[str, Any]:
        """The config as JSON-ready data (callables as ``module.name`` strings)."""
        data = self.config.model_dump(exclude_defaults=True, by_alias=True)
        return _stringify(data)

    def fingerprint(self) -> str:
        """Hash of everything in the config that can change a prompt or a score."""
        return hash_string(canonical_json(self.dump_config()))[:16]


def _parameters(fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def _qualified_name(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _short_name(fn: Any) -> str:
    """``utils.process_results``: the function with the last part of its module's name."""
    module = str(getattr(fn, "__module__", "") or "").rpartition(".")[2]
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{module}.{name}" if module else name


def _stringify(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stringify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stringify(v) for v in value]
    if callable(value):
        return _qualified_name(value)
    return value


def _visual_adapter(visual: Callable[..., list[Any]]) -> Callable[[Any], list[Any]]:
    def doc_to_visual(doc: Any) -> list[Any]:
        return visual(doc)

    return doc_to_visual


def _messages_adapter(task: ConfigurableTask, doc_id: int) -> Callable[..., list[dict[str, Any]]]:
    def doc_to_messages(doc: Any, **extra: Any) -> list[dict[str, Any]]:
        return task.build_messages(doc, doc_id, **extra)

    return doc_to_messages


def _target_adapter(task: ConfigurableTask) -> Callable[[Any], str]:
    def doc_to_target(doc: Any) -> str:
        target = task.gold_text(doc)
        if isinstance(target, list):
            target = target[0]
        return f"{task.config.target_delimiter}{target}"

    return doc_to_target

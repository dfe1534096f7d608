"""The dataset columns each bundled task reads: what a local copy of its dataset must hold.

One entry per dataset id (``"id:config"`` where a config's columns differ). Each maps a column to
its type; the media types are ``image`` (a ``datasets`` Image), ``audio`` (a ``datasets`` Audio) and
``video`` (the name of a video file that lies beside the data files). ``answer`` names the column
that holds the gold answer. ``lmms-eval tasks info NAME`` prints the entry of a task, with the file
layout found by calling the task's own functions; ``tests/test_task_info.py`` calls every bundled
task's ``doc_to_*`` and ``process_results`` functions on a document that records what they read, and
fails when they read a column that is not declared here or no longer read one that is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MEDIA_TYPES = ("image", "video", "audio")


@dataclass(frozen=True)
class Columns:
    """The columns a task reads (``{name: type}``) and the one holding the gold answer."""

    types: Mapping[str, str]
    answer: str | None
    extra: Mapping[str, str] = field(default_factory=dict)  # read by some tasks of the dataset only

    def all_types(self) -> dict[str, str]:
        return {**self.types, **self.extra}


_MC_VIDEO = {"question": "str", "options": "list[str]"}
_AUDIO_QA = {"audio": "audio", "question": "str", "answer": "str"}
_MMBENCH = {
    "index": "int",
    "image": "image",
    "question": "str",
    "hint": "str",
    **dict.fromkeys("ABCDE", "str"),
    "answer": "str",
    "category": "str",
    "L2-category": "str",
}
_MATHVISTA = {
    "pid": "str",
    "decoded_image": "image",
    "question": "str",
    "query": "str",
    "choices": "list[str]",
    "unit": "str",
    "answer": "str",
    "answer_type": "str",
    "question_type": "str",
    "metadata": "dict",
}

DATASET_COLUMNS: dict[str, Columns] = {
    "lmms-eval/ActivityNetQA": Columns({"video_name": "video", "question": "str", "answer": "str"}, "answer"),
    "lmms-lab-encoder/ai2d": Columns(
        {"image": "image", "question": "str", "options": "list[str]", "answer": "str"}, "answer"
    ),
    "lmms-lab/AIR_Bench:Chat": Columns(
        {
            "uniq_id": "str",
            "audio": "audio",
            "question": "str",
            "answer_gt": "str",
            "task_name": "str",
            "meta_info": "str",
        },
        "answer_gt",
    ),
    "lmms-lab/AIR_Bench:Foundation": Columns(
        {
            "uniq_id": "str",
            "audio": "audio",
            "question": "str",
            **{f"choice_{c}": "str" for c in "abcd"},
            "answer_gt": "str",
            "task_name": "str",
        },
        "answer_gt",
    ),
    "lmms-eval/charades_sta": Columns(
        {"video": "video", "caption": "str", "timestamp": "list[float]"}, "timestamp"
    ),
    "lmms-lab-encoder/ChartQA": Columns(
        {"image": "image", "question": "str", "answer": "str", "type": "str"}, "answer"
    ),
    "lmms-lab-audio/ClothoAQA": Columns(_AUDIO_QA, "answer"),
    "lmms-lab-encoder/COCO-Caption2017": Columns(
        {"question_id": "str", "image": "image", "answer": "list[str]"}, "answer"
    ),
    "lmms-lab-audio/common_voice_15": Columns(
        {"path": "str", "audio": "audio", "sentence": "str", "locale": "str"}, "sentence"
    ),
    "lmms-lab-encoder/DocVQA": Columns(
        {"image": "image", "question": "str", "answers": "list[str]"}, "answers"
    ),
    "lmms-eval/egoschema": Columns(
        {"video_idx": "video", "question": "str", "option": "list[str]", "answer": "str"}, "answer"
    ),
    "lmms-lab-encoder/GQA": Columns({"image": "image", "question": "str", "answer": "str"}, "answer"),
    "lmms-lab-encoder/HallusionBench": Columns(
        {"question_id": "str", "image": "image", "question": "str", "gt_answer": "str"},
        "gt_answer",
        extra={"category": "str", "subcategory": "str", "set_id": "str", "figure_id": "str"},
    ),
    "lmms-lab-audio/fleurs": Columns(
        {"audio": "audio", "transcription": "str", "language": "str", "path": "str"}, "transcription"
    ),
    "lmms-lab-audio/covost2_en-zh": Columns({"audio": "audio", "translation": "str"}, "translation"),
    "lmms-lab-audio/covost2": Columns({"audio": "audio", "gt": "str"}, "gt"),
    "lmms-lab-audio/gigaspeech": Columns({"audio": "audio", "gt": "str"}, "gt"),
    "lmms-lab-audio/tedlium": Columns({"audio": "audio", "gt": "str"}, "gt"),
    "lmms-lab-audio/vocalsound": Columns({"audio": "audio", "answer": "str"}, "answer"),
    "lmms-lab-audio/librispeech": Columns(
        {"audio": "audio", "gt": "str", "source": "str", "task": "str"}, "gt"
    ),
    "lmms-eval/LVBench": Columns(
        {"video_path": "video", "question": "str", "answer": "str"}, "answer", extra={"options": "list[str]"}
    ),
    "longvideobench/LongVideoBench": Columns(
        {
            "video_path": "video",
            "subtitle_path": "str",
            "duration": "float",
            "duration_group": "int",
            "question": "str",
            **{f"option{i}": "str" for i in range(5)},
            "correct_choice": "int",
            "question_category": "str",
        },
        "correct_choice",
    ),
    "lmms-eval/TempCompass": Columns(
        {"video_id": "video", "question": "str", "answer": "str"}, "answer", extra={"dim": "str"}
    ),
    "lmms-eval/TOMATO": Columns(
        {"video_path": "video", "question": "str", "options": "list[str]", "answer": "int"}, "answer"
    ),
    "lmms-lab/worldsense": Columns(
        {"video_path": "video", "question": "str", "candidates": "list[str]", "answer": "str"}, "answer"
    ),
    "AI4Math/MathVista": Columns(_MATHVISTA, "answer"),
    "sy1998/MLVU_dev": Columns(
        {"video_name": "video", "question": "str", "answer": "str", "task_type": "str"}, "answer"
    ),
    "lmms-lab-audio/mmau": Columns(
        {
            "id": "str",
            "audio": "audio",
            "question": "str",
            "choices": "list[str]",
            "answer": "str",
            "task": "str",
        },
        "answer",
    ),
    "lmms-eval/MMVU": Columns(
        {
            "video_path": "video",
            "question": "str",
            "question_type": "str",
            "choices": "dict",
            "answer": "str",
        },
        "answer",
    ),
    "lmms-lab-encoder/MMBench": Columns(
        _MMBENCH, "answer", extra={"source": "str", "split": "str", "prediction": "str"}
    ),
    "lmms-lab-encoder/MME": Columns(
        {"question_id": "str", "image": "image", "question": "str", "answer": "str", "category": "str"},
        "answer",
    ),
    "lmms-lab-encoder/MMMU": Columns(
        {
            "id": "str",
            "question": "str",
            "options": "str (a Python list)",
            "question_type": "str",
            "answer": "str",
        },
        "answer",
    ),
    # -- wave 3 (issue 30): MMMU-Pro, MathVision, ZeroBench, MMVP
    "MMMU/MMMU_Pro:standard (10 options)": Columns(
        {"question": "str", "options": "str (a Python list)", "answer": "str", "subject": "str"},
        "answer",
    ),
    "MMMU/MMMU_Pro:vision": Columns(
        {"image": "image", "options": "str (a Python list)", "answer": "str", "subject": "str"},
        "answer",
    ),
    "MMMU/MMMU_Pro:composite": Columns({"image": "image", "answer": "str (a Python list)"}, "answer"),
    "MMMU/MMMU_Pro:standard (4 options)": Columns(
        {"question": "str", "options": "str (a Python list)", "answer": "str"}, "answer"
    ),
    "MathLLMs/MathVision": Columns(
        {"question": "str", "options": "list[str]", "decoded_image": "image", "answer": "str"}, "answer"
    ),
    "jonathan-roberts1/zerobench": Columns(
        {
            "question_id": "str",
            "question_text": "str",
            "question_images_decoded": "list[image]",
            "question_answer": "str",
        },
        "question_answer",
    ),
    "lmms-lab-eval/MMVP": Columns(
        {"Index": "int", "Question": "str", "Options": "str", "Correct Answer": "str", "image": "image"},
        "Correct Answer",
    ),
    "Lin-Chen/MMStar": Columns(
        {
            "index": "int",
            "image": "image",
            "question": "str",
            "answer": "str",
            "category": "str",
            "l2_category": "str",
        },
        "answer",
    ),
    "OpenGVLab/MVBench": Columns(
        {"video": "video", "question": "str", "candidates": "list[str]", "answer": "str"}, "answer"
    ),
    "lmms-eval/NExTQA:MC": Columns(
        {
            "video": "video",
            "question": "str",
            **{f"a{i}": "str" for i in range(5)},
            "answer": "int",
            "type": "str",
        },
        "answer",
    ),
    "lmms-eval/NExTQA:OE": Columns(
        {"video": "video", "question": "str", "answer": "str", "additional_ref_answer": "str"}, "answer"
    ),
    "echo840/OCRBench": Columns(
        {
            "image": "image",
            "question": "str",
            "answer": "list[str]",
            "dataset": "str",
            "question_type": "str",
        },
        "answer",
    ),
    "lmms-eval/PerceptionTest_Val": Columns(
        {"video_name": "video", "question": "str", "options": "list[str]", "answer_id": "int"},
        "answer_id",
        extra={"area": "str", "reasoning": "str"},
    ),
    "lmms-lab-encoder/POPE": Columns(
        {"question_id": "str", "image": "image", "question": "str", "answer": "str"}, "answer"
    ),
    "lmms-lab-encoder/RealWorldQA": Columns({"image": "image", "question": "str", "answer": "str"}, "answer"),
    "lmms-lab-encoder/ScienceQA": Columns(
        {"image": "image", "question": "str", "hint": "str", "choices": "list[str]", "answer": "int"},
        "answer",
    ),
    "lmms-lab-encoder/SEED-Bench": Columns(
        {
            "question_id": "str",
            "image": "image",
            "question": "str",
            **{f"choice_{c}": "str" for c in "abcd"},
            "answer": "str",
            "data_type": "str",
        },
        "answer",
    ),
    "lmms-lab-encoder/textvqa": Columns(
        {"question_id": "str", "image": "image", "question": "str", "answers": "list[str]"}, "answers"
    ),
    "nyu-visionx/VSI-Bench": Columns(
        {
            "dataset": "str",
            "scene_name": "video",
            "question": "str",
            "question_type": "str",
            "options": "list[str]",
            "ground_truth": "str",
        },
        "ground_truth",
    ),
    "lmms-eval/VideoMMMU": Columns(
        {"id": "str", "question": "str", "options": "list[str]", "question_type": "str", "answer": "str"},
        "answer",
    ),
    "lmms-eval/Video-MME": Columns(
        {
            "videoID": "video",
            "duration": "str",
            "domain": "str",
            "task_type": "str",
            **_MC_VIDEO,
            "answer": "str",
        },
        "answer",
    ),
    # grounding, GUI and counting (issue 30)
    "rootsautomation/ScreenSpot": Columns(
        {
            "file_name": "str",
            "image": "image",
            "bbox": "list[float] (x1, y1, x2, y2 as fractions)",
            "instruction": "str",
            "data_type": "str (text | icon)",
            "data_source": "str (ios, android, windows, macos, or a web site)",
        },
        "bbox",
    ),
    "HongxinLi/ScreenSpot_v2": Columns(
        {
            "image": "image",
            "bbox": "list[float] (x1, y1, x2, y2)",
            "instruction": "str",
            "data_type": "str (text | icon)",
        },
        "bbox",
    ),
    "TIGER-Lab/ScreenSpot-Pro": Columns(
        {
            "image": "image",
            "bbox": "list[float] (x1, y1, x2, y2 in pixels)",
            "instruction": "str",
            "ui_type": "str (text | icon)",
            "img_size": "list[int] (width, height)",
        },
        "bbox",
        extra={"image_width": "int", "image_height": "int", "group": "str (Dev, Creative, CAD, ...)"},
    ),
    **{
        f"lmms-lab-encoder/{name}": Columns(
            {
                "question_id": "str",
                "image": "image",
                "answer": "list[str] (the region's referring expressions)",
                "bbox": "list[float] (COCO x, y, width, height in pixels)",
                "segmentation": "list[float] (polygon x, y, x, y, ...)",
            },
            "answer",
        )
        for name in ("RefCOCO", "RefCOCOplus", "RefCOCOg")
    },
    "vikhyatk/CountBenchQA": Columns(
        {"image": "image", "question": "str", "number": "int", "text": "str (the image caption)"}, "number"
    ),
    # documents and text in images (issue 30)
    "lmms-lab-encoder/VizWiz-VQA": Columns(
        {"image": "image", "question": "str", "answers": "list[str] (ten)"}, "answers"
    ),
    "lmms-lab-encoder/OK-VQA": Columns(
        {"question_id": "int", "image": "image", "question": "str", "answers": "list[str] (ten)"}, "answers"
    ),
    "lmms-lab-encoder/ST-VQA": Columns(
        {
            "question_id": "int",
            "image": "image",
            "question": "str",
            "answers": "list[str] (hidden: empty in the test split)",
        },
        "answers",
    ),
    # captions (issue 30)
    "lmms-lab-encoder/NoCaps": Columns(
        {"image_id": "int", "image": "image", "annotations_captions": "list[str] (ten)"},
        "annotations_captions",
    ),
    "lmms-lab-encoder/flickr30k": Columns(
        {"img_id": "str", "image": "image", "caption": "list[str] (five)"}, "caption"
    ),
    # open-ended, judge-scored (issue 30)
    "lmms-lab-encoder/MMVet": Columns(
        {
            "question_id": "str",
            "image": "image",
            "question": "str",
            "answer": "str (may hold <AND> / <OR>)",
            "capability": "str (comma-separated: rec, ocr, know, gen, spat, math)",
        },
        "answer",
    ),
    "lmms-lab-encoder/llava-bench-in-the-wild": Columns(
        {
            "question_id": "int",
            "image": "image",
            "question": "str",
            "caption": "str",
            "gpt_answer": "str (GPT-4's reference answer)",
            "category": "str (conv | detail | complex)",
        },
        "gpt_answer",
    ),
    "m-a-p/SimpleVQA": Columns(
        {"image": "image (or a base64 string)", "question": "str", "answer": "str"}, "answer"
    ),
    "lmms-lab-encoder/MIA-Bench": Columns(
        {
            "image": "image",
            "instruction": "str",
            "num_of_component": "int (1-5)",
            "components": "list[str]",
            "component_weight": "list[int]",
        },
        "components",
    ),
    "ahmed-masry/ChartQAPro": Columns(
        {
            "image": "image (or PNG bytes)",
            "Question": "list[str] (several for a conversation)",
            "Answer": "list[str] (one per question)",
            "Question Type": "str (Factoid, Conversational, Hypothetical, Fact Checking, Multi Choice)",
            "Year": "list[str] (YES when the answer is a year)",
            "Paragraph": "str (context; may be empty)",
        },
        "Answer",
    ),
    "lmms-lab-encoder/VQAv2": Columns(
        {"image": "image", "question": "str", "answers": "list[dict]", "multiple_choice_answer": "str"},
        "answers",
    ),
    # perception (issue 30): CV-Bench, V* Bench, HR-Bench, NaturalBench
    **{
        f"nyu-visionx/CV-Bench:{config}": Columns(
            {
                "idx": "int",
                "type": "str (2D | 3D)",
                "task": "str (Count, Relation, Depth, Distance)",
                "source": "str (ADE20K, COCO, Omni3D)",
                "image": "image",
                "prompt": "str (the question with its (A) ... options)",
                "choices": "list[str]",
                "answer": 'str ("(A)" ...)',
            },
            "answer",
        )
        for config in ("default", "2D", "3D")
    },
    "lmms-lab-encoder/vstar-bench": Columns(
        {
            "question_id": "str",
            "image": "image",
            "text": "str (the question with its (A) ... options)",
            "label": "str (A-D)",
            "category": "str (direct_attributes | relative_position)",
        },
        "label",
    ),
    "DreamMr/HR-Bench:hrbench_version_split": Columns(
        {
            "index": "int",
            "image": "str (base64 image)",
            "question": "str",
            **dict.fromkeys("ABCD", "str"),
            "answer": "str (A-D)",
            "category": "str (single | cross)",
            "cycle_category": "str",
        },
        "answer",
    ),
    "BLINK-Benchmark/BLINK": Columns(
        {
            "idx": "str",
            "sub_task": "str",
            **dict.fromkeys(("image_1", "image_2", "image_3", "image_4"), "image (image_2..4 may be empty)"),
            "choices": "list[str]",
            "prompt": "str (the question with its (A) ... options)",
            "answer": 'str ("(A)" ...)',
        },
        "answer",
    ),
    "MUIRBENCH/MUIRBENCH": Columns(
        {
            "idx": "str",
            "task": "str",
            "image_relation": "str",
            "image_type": "str",
            "question": "str (with <image> tags)",
            "options": "list[str]",
            "answer": "str (A, B, ...)",
            "image_list": "list[image]",
        },
        "answer",
    ),
    **{
        f"yifanzhang114/{name}": Columns(
            {
                "index": "int",
                "question": "str",
                "multi-choice options": 'list[str] ("(A) ..." to "(E) ...")',
                "answer": "str (A-E)",
                "bytes": "str (base64 image)",
                "category": "str (Perception/<subtask> | Reasoning/<subtask>)",
                "l2-category": "str",
            },
            "answer",
        )
        for name in ("MME-RealWorld-Lmms-eval", "MME-RealWorld-lite-lmms-eval", "MME-RealWorld-CN-Lmms-eval")
    },
    "lscpku/LogicVista": Columns(
        {"question": "str (with its lettered options)", "answer": "str", "image": "image"}, "answer"
    ),
    "kcz358/DynaMath": Columns(
        {
            "id": "str (the published aggregation groups by it)",
            "question_id": "str (the seed question)",
            "question": "str",
            "decoded_image": "image",
            "ground_truth": "str",
        },
        "ground_truth",
    ),
    "BaiqiL/NaturalBench-lmms-eval": Columns(
        {
            "Index": "int (groups of four: the gold answers follow from Index % 4)",
            "Image": "image",
            "Question": "str",
            "Question_Type": "str (yes_no | multiple_choice)",
        },
        None,
    ),
}


# tasks whose data files ship with the package (no dataset id)
TASK_COLUMNS: dict[str, Columns] = {
    "demo_qa": Columns({"question": "str", "answer": "str"}, "answer"),
    "demo_shapes": Columns(
        {"question": "str", "answer": "str", "category": "str", "objects": "list[dict] (drawn as the image)"},
        "answer",
    ),
}


def columns_of(task_name: str, dataset_path: str | None, dataset_name: str | None) -> Columns | None:
    """The declared columns of a task: by its name, else by its dataset (``"id:config"``, then ``id``)."""
    if task_name in TASK_COLUMNS:
        return TASK_COLUMNS[task_name]
    if not dataset_path:
        return None
    return DATASET_COLUMNS.get(f"{dataset_path}:{dataset_name}") or DATASET_COLUMNS.get(dataset_path)

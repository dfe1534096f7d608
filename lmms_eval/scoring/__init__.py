"""Scoring rules of the bundled benchmarks, in one tested place.

Task folders only wire these into ``process_results`` and aggregations; a user's own task can
import them too. Every function is deterministic, with one exception kept for the published
result keys: the published random-letter fallback (:mod:`~lmms_eval.scoring.published`), a
``random.Random`` seeded from ``--seed`` at the start of each run, so the same seed draws the same
letters as the published package. The ``*_strict`` keys never draw.

* :mod:`~lmms_eval.scoring.published`: the seeded stream of the published random fallbacks.

* :mod:`~lmms_eval.scoring.choice`: option letters from free text (ranked rules, never a guess),
  leading-letter and first-character rules, macro means (AI2D, ScienceQA, SEED-Bench, MMStar,
  RealWorldQA).
* :mod:`~lmms_eval.scoring.mmmu`: MMMU's multiple-choice and open-answer parsing, disciplines.
* :mod:`~lmms_eval.scoring.circular`: MMBench answer extraction and CircularEval.
* :mod:`~lmms_eval.scoring.vqa`: the VQA answer normaliser and 10-annotator soft accuracy.
* :mod:`~lmms_eval.scoring.text`: ChartQA relaxed accuracy, OCRBench matching, ANLS.
* :mod:`~lmms_eval.scoring.yesno`: yes/no rules and the MME, POPE and HallusionBench aggregations.
* :mod:`~lmms_eval.scoring.mathvista`: MathVista prompts, answer extraction and normalisation.
* :mod:`~lmms_eval.scoring.caption`: BLEU-1..4, METEOR, ROUGE-L and CIDEr-D for captions.
"""
